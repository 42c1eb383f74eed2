import Joi from 'joi';
import { list } from './joi-list.ts';
import { workerUrlsSchema } from './worker-urls.ts';

const SANDBOX_MODES = ['auto', 'on', 'off'] as const;

/** `worker:` in the config: how this process runs attempts (docs/worker.md). */
export const workerSchema = Joi.object({
  concurrency: Joi.number().integer().min(1).max(256).required(),
  workspace_root: Joi.string().allow(null, '').required(),
  keep_workspaces: Joi.boolean().required(),
  workspace_idle_seconds: Joi.number().integer().min(1).required(),
  repo_cache: Joi.object({
    enabled: Joi.boolean().required(),
    path: Joi.string().allow(null, '').required(),
    max_bytes: Joi.number()
      .integer()
      .min(1024 * 1024)
      .required(),
    copy_on_write: Joi.boolean().required(),
  }).required(),
  run_as_uid: Joi.number().integer().min(0).allow(null).required(),
  run_as_gid: Joi.number().integer().min(0).allow(null).required(),
  heartbeat_seconds: Joi.number().positive().max(3600).required(),
  lease_seconds: Joi.number()
    .integer()
    .min(2)
    .max(86_400)
    .greater(Joi.ref('heartbeat_seconds'))
    .required()
    .messages({ 'number.greater': '"worker.lease_seconds" must be greater than worker.heartbeat_seconds (a lease must outlive the beat that renews it)' }),
  api_url: Joi.string().uri().allow(null, '').required(),
  log_flush_ms: Joi.number().integer().min(0).max(10_000).required(),
  harness_report_seconds: Joi.number().positive().max(3600).required(),
  urls: workerUrlsSchema,
  dispatch_timeout_ms: Joi.number().integer().min(100).max(120_000).required(),
  dispatch_retry_ms: Joi.number().integer().min(10).max(600_000).required(),
  sandbox: Joi.object({
    mode: Joi.string()
      .valid(...SANDBOX_MODES)
      .required(),
    network: Joi.string().valid('open', 'none').required(),
    read_only: list(Joi.string().pattern(/^\//, 'an absolute path')).required(),
  }).required(),
  git: Joi.object({
    token_secret: Joi.string()
      .pattern(/^[A-Z][A-Z0-9_]*$/)
      .required(),
    ssh_key_secret: Joi.string()
      .pattern(/^[A-Z][A-Z0-9_]*$/)
      .required(),
    author_name: Joi.string().min(1).required(),
    author_email: Joi.string().min(1).required(),
    allow_file_urls: Joi.boolean().allow(null).required(),
    file_roots: list(Joi.string().pattern(/^\//, 'an absolute path')).required(),
  }).required(),
  diff: Joi.object({
    max_patch_bytes: Joi.number()
      .integer()
      .min(0)
      .max(64 * 1024 * 1024)
      .required(),
    max_files: Joi.number().integer().min(1).max(100_000).required(),
  }).required(),
}).required();
