import Boom from '@hapi/boom';
import type { InferenceConfig, ProviderSettings } from '../../core/config/schema.ts';
import type { ProviderKind } from '../../core/ports/inference.ts';
import { adapterFor } from './providers/index.ts';
import { type UpstreamClient } from './upstream.ts';
import type { Credentials } from './credentials.ts';

export interface ProviderView {
  name: string;
  kind: ProviderKind;
  description: string;
  base_url: string;
  credential_secret: string | null;
  models_endpoint: string;
}

export interface ProviderModel {
  id: string;
  provider: string;
  kind: ProviderKind;
  source: 'provider' | 'config';
}

/**
 * The configured providers and their models: asked of the provider's own models endpoint when its
 * credential is set (kept `models_cache_seconds`), else the configured list.
 */
export class ProviderCatalog {
  private readonly cache = new Map<string, { at: number; models: ProviderModel[] }>();

  constructor(
    private readonly settings: InferenceConfig,
    private readonly client: UpstreamClient,
    private readonly credentials: Credentials,
  ) {}

  list(): ProviderView[] {
    return Object.entries(this.settings.providers).map(([name, p]) => ({
      name,
      kind: p.kind,
      description: adapterFor(p.kind).description,
      base_url: p.base_url,
      credential_secret: p.credential_secret,
      models_endpoint: `${p.base_url.replace(/\/+$/, '')}${adapterFor(p.kind).modelsPath}`,
    }));
  }

  provider(name: string): ProviderSettings {
    const p = Object.hasOwn(this.settings.providers, name) ? this.settings.providers[name] : undefined;
    if (!p) throw Boom.notFound(`provider ${name} not found; configured: ${Object.keys(this.settings.providers).join(', ') || 'none'}`);
    return p;
  }

  async models(name: string): Promise<ProviderModel[]> {
    const p = this.provider(name);
    const cached = this.cache.get(name);
    if (cached && Date.now() - cached.at < this.settings.models_cache_seconds * 1000) return cached.models;
    const key = await this.credentials.value(p.credential_secret, null, `provider ${name}`, 'server').catch(() => null);
    const fromConfig = p.models.map((id) => ({ id, provider: name, kind: p.kind, source: 'config' as const }));
    if (!key) return fromConfig; // not asked without its credential; nothing cached, so setting the secret takes effect at once
    const adapter = adapterFor(p.kind);
    const url = `${p.base_url.replace(/\/+$/, '')}${adapter.modelsPath}`;
    let body: unknown;
    try {
      const answer = await this.client.send({
        method: 'GET',
        url,
        headers: adapter.headers(key),
        requestTimeoutMs: this.settings.request_timeout_ms,
        guarded: false,
      });
      const text = await answer.text(this.settings.idle_timeout_ms);
      if (answer.status < 200 || answer.status >= 300) throw new Error(`it answered ${answer.status}`);
      body = JSON.parse(text);
    } catch (e) {
      if (fromConfig.length) return fromConfig;
      throw Boom.badGateway(`provider ${name}'s models endpoint ${url} failed: ${(e as Error).message}`);
    }
    const models = adapter.modelIds(body).map((id) => ({ id, provider: name, kind: p.kind, source: 'provider' as const }));
    this.cache.set(name, { at: Date.now(), models });
    return models;
  }

  /** Every provider's models; a provider that cannot be asked contributes its configured list. */
  async allModels(): Promise<ProviderModel[]> {
    const lists = await Promise.all(Object.keys(this.settings.providers).map((name) => this.models(name).catch(() => [])));
    return lists.flat();
  }
}
