/**
 * Which domain owns each table: the one place this is written down. Only the owner's SQL names
 * a table; every other domain asks the owner through a port (core/ports). `core` is the kernel.
 * Each migration's tables, by owner; test/architecture/table-ownership.test.ts checks this against
 * the migrations and the code.
 */
export const TABLE_OWNERS = {
  // 001_kernel
  system_state: 'core',
  signing_keys: 'core',
  users: 'auth',
  user_keys: 'auth',
  auth_challenges: 'auth',
  orgs: 'orgs',
  org_members: 'core',
  projects: 'projects',
  project_members: 'core',
  // 002_jobs, 004_receipts
  jobs: 'jobs',
  job_relations: 'jobs',
  job_attempts: 'jobs',
  job_gates: 'jobs',
  job_reviews: 'jobs',
  job_attachments: 'jobs',
  attempt_phases: 'jobs',
  attempt_usage: 'jobs',
  attempt_receipts: 'jobs',
  // 007_access
  access_roles: 'access',
  access_groups: 'access',
  access_group_members: 'access',
  service_accounts: 'access',
  service_account_tokens: 'access',
  access_bindings: 'access',
  // 008_secrets
  secrets: 'secrets',
  // 009_nostr, 010_invites
  user_nostr_keys: 'auth',
  nostr_challenges: 'auth',
  nostr_seen_events: 'auth',
  invites: 'auth',
  access_requests: 'auth',
  // 046_app_login
  magic_links: 'auth',
  // 011_manifests
  manifests: 'manifest',
  // 012_pipeline_runs, 013_event_routing
  pipeline_runs: 'pipelines',
  pipeline_run_steps: 'pipelines',
  pipeline_run_events: 'pipelines',
  events: 'events',
  schedules: 'events',
  schedule_registrations: 'events',
  // 014_webhooks
  webhook_subscriptions: 'webhooks',
  webhook_replays: 'webhooks',
  webhook_deliveries: 'webhooks',
  webhook_outbox: 'webhooks',
  // 015_integrations
  chat_routes: 'integrations',
  // 016_worker: the attempt log is the jobs domain's record; the worker writes it through a port
  attempt_logs: 'jobs',
  // 017_resources
  org_docs: 'resources',
  org_doc_versions: 'resources',
  // 018_threads
  threads: 'threads',
  thread_messages: 'threads',
  // 019_inference
  inference_targets: 'inference',
  inference_models: 'inference',
  inference_usage: 'inference',
  // 020_builds
  build_specs: 'builds',
  build_runs: 'builds',
  build_artifacts: 'builds',
  build_logs: 'builds',
  releases: 'builds',
  // 021_billing
  rate_cards: 'billing',
  exchange_rates: 'billing',
  org_billing: 'billing',
  // 023_console
  console_login_links: 'console',
  // 024_environments
  environments: 'environments',
  environment_deploys: 'environments',
  // 025_analytics_rollups: each table's owner keeps its daily rollup
  job_day_counts: 'jobs',
  pipeline_run_day_counts: 'pipelines',
  // 026_environment_deploy_logs
  environment_deploy_logs: 'environments',
  // 029_chat_team_bindings
  chat_team_bindings: 'integrations',
  chat_team_binding_codes: 'integrations',
  // 030_rate_limits_quotas
  rate_limit_buckets: 'core',
  // 035_harness_reports: the worker writes its report through a port (HarnessAvailability)
  harness_reports: 'harnesses',
  // 036_attempt_diffs
  attempt_diffs: 'jobs',
  // 037_harness_oauth_tokens
  harness_oauth_tokens: 'harnesses',
  // 043_work_items: the work engine's queue (core/work); domains reach it through WorkQueue
  work_items: 'core',
  // 055_environment_protection
  environment_deploy_reviews: 'environments',
  // 056_delivery_dedupe_and_limits
  magic_link_limits: 'auth',
} as const;

export type TableName = keyof typeof TABLE_OWNERS;
