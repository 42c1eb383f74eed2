import type { InjectionToken } from 'tsyringe';

/**
 * A port the kernel declares and the owning plugin fills when it registers, so a consumer can be
 * built before its owner (auth registers before orgs and projects, yet reads both). Calling it
 * before it is filled fails naming the plugin to load.
 */
export class PortSlot<T extends object> {
  private impl: T | null = null;
  readonly port: T;

  constructor(owner: string, what: string) {
    this.port = new Proxy({} as T, {
      get: (_target, key) => {
        if (!this.impl) throw new Error(`the ${owner} plugin is not loaded: nothing answers ${String(key)} of its ${what}`);
        const value = (this.impl as Record<string | symbol, unknown>)[key];
        return typeof value === 'function' ? value.bind(this.impl) : value;
      },
    });
  }

  fill(impl: T): void {
    this.impl = impl;
  }
}

export type Registrar = { registerInstance<T>(token: InjectionToken<T>, instance: T): unknown };

/** Registers an empty slot under `slotToken` and its port under `portToken`. */
export function declareSlot<T extends object>(
  container: Registrar,
  slotToken: InjectionToken<PortSlot<T>>,
  portToken: InjectionToken<T>,
  slot: PortSlot<T>,
): void {
  container.registerInstance(slotToken, slot);
  container.registerInstance(portToken, slot.port);
}
