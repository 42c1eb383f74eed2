import Joi from 'joi';

/** Arrays also accept a comma-separated string, the form environment overrides take. */
const CommaJoi = Joi.extend({
  type: 'array',
  base: Joi.array(),
  coerce: {
    from: 'string',
    method: (value: string) => ({
      value: value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    }),
  },
});
export const list = (item: Joi.Schema) => CommaJoi.array().items(item);
