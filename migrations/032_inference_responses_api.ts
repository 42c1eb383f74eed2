import type { Knex } from 'knex';

/**
 * An openai target may say its upstream also serves the OpenAI Responses API (`POST {base}/responses`):
 * the gateway then passes Responses calls through to it instead of translating them to chat
 * completions (docs/inference.md), which reaches models served only through Responses.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('inference_targets', (t) => {
    t.boolean('responses_api').notNullable().defaultTo(false);
  });
}
