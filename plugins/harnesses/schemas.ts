import Joi from 'joi';
import { MAX_LIMIT, pageSchema } from '../../core/http/lists.ts';

export const nameParams = Joi.object({
  name: Joi.string()
    .max(100)
    .pattern(/^[a-z][a-z0-9_-]*$/)
    .required()
    .messages({
      'string.pattern.base':
        '"name" must be a harness id or alias (lower-case letters, digits, _ or -); the harness:variant syntax is not parsed, use harness_options.variant',
    })
    .description('harness id or alias, e.g. harness_b or coder'),
});

export const listQuery = Joi.object({
  limit: Joi.number().integer().min(1).max(MAX_LIMIT).default(10).description(`page size, 1 to ${MAX_LIMIT}`),
  offset: Joi.number().integer().min(0).default(0),
});

export const harnessSchema = Joi.object({
  name: Joi.string().required(),
  aliases: Joi.array().items(Joi.string()).required(),
  description: Joi.string().required(),
  variants: Joi.array()
    .items(
      Joi.object({
        name: Joi.string().required(),
        description: Joi.string().required(),
        source: Joi.string().required().description('builtin, or the plugin that declares it'),
      }).label('HarnessVariant'),
    )
    .required(),
  auth: Joi.object({
    available: Joi.boolean().required().description('the binary is found and credentials are present'),
    reason: Joi.string().required(),
    instructions: Joi.array().items(Joi.string()).required(),
  })
    .label('HarnessAuth')
    .required(),
  capabilities: Joi.object({
    supports_model: Joi.boolean().required(),
    model_examples: Joi.array().items(Joi.string()).required(),
    default_model: Joi.string()
      .allow(null)
      .required()
      .description('the model a job that names none runs, passed to the CLI explicitly (harnesses.<id>.default_model); null: the CLI chooses'),
    reasoning: Joi.object({
      supported: Joi.boolean().required(),
      levels: Joi.array().items(Joi.string()).required(),
      mode: Joi.string().allow(null).required(),
    })
      .label('HarnessReasoning')
      .required(),
  })
    .label('HarnessCapabilities')
    .required(),
}).label('Harness');

export const harnessPage = pageSchema(harnessSchema, 'HarnessList');
