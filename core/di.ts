// tsyringe needs the Reflect metadata polyfill before it loads; every module that uses the
// container imports it from here, so the order of imports never matters.
import 'reflect-metadata';

export { container, inject, injectable } from 'tsyringe';
export type { DependencyContainer, InjectionToken } from 'tsyringe';
