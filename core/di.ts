// tsyringe needs the Reflect metadata polyfill before it loads; every module that uses the
// container imports it from here, so the order of imports never matters.
import 'reflect-metadata';
import type { DependencyContainer, InjectionToken } from 'tsyringe';

export { container, inject, injectable } from 'tsyringe';
export type { DependencyContainer, InjectionToken } from 'tsyringe';

/**
 * For a port a plugin fills after the consumer is built (plugins register in config order, and
 * hapi checks `dependencies` only once all are registered): a function that resolves it on each
 * call. Everything else is injected with `@inject(Token)`.
 */
export function resolveLater<T>(container: DependencyContainer, token: InjectionToken<T>): () => T {
  return () => container.resolve(token);
}

/** Like resolveLater, for a port that may never be filled: null while nothing is registered. */
export function lookupLater<T>(container: DependencyContainer, token: InjectionToken<T>): () => T | null {
  return () => (container.isRegistered(token, true) ? container.resolve(token) : null);
}
