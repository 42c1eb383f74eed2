import type { InjectionToken } from 'tsyringe';
import type { Logger } from 'pino';
import type { Config } from './config/schema.ts';
import type { Db } from './db/knex.ts';
import type { Sealer } from './crypto/sealer.ts';

/** Typed keys of what the kernel puts in the container; services get them with `@inject(Tokens.X)`. */
export const Tokens = {
  Config: Symbol('Config') as InjectionToken<Config>,
  Db: Symbol('Db') as InjectionToken<Db>,
  /**
   * A small pool of its own for what must work while reads pile up on Db: /health, and claiming,
   * heartbeating and ending attempts (database.control_pool_max connections).
   */
  ControlDb: Symbol('ControlDb') as InjectionToken<Db>,
  DatabaseUrl: Symbol('DatabaseUrl') as InjectionToken<string>,
  Logger: Symbol('Logger') as InjectionToken<Logger>,
  Sealer: Symbol('Sealer') as InjectionToken<Sealer>,
  Clock: Symbol('Clock') as InjectionToken<Clock>,
  StartedAt: Symbol('StartedAt') as InjectionToken<Date>,
};

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
