/**
 * What `svc/client` knows about each operation, derived from the generated types
 * (client/generated/openapi.ts): the paths a method has, and an operation's path parameters,
 * query, JSON body and successful JSON answer.
 */
import type { components, operations, paths } from './generated/openapi.ts';

export type { components, operations, paths };

/** Every named schema of the document: `Schemas['Job']`. */
export type Schemas = components['schemas'];

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The path templates that have an operation for the method: `PathsOf<'POST'>` includes `'/projects/{project_id}/jobs'`. */
export type PathsOf<M extends Method> = {
  [P in keyof paths]: paths[P] extends { [K in Lowercase<M>]: infer Op } ? (Op extends undefined ? never : P) : never;
}[keyof paths];

/** The operation behind a method and a path template. */
export type OperationOf<M extends Method, P extends PathsOf<M>> = paths[P][Lowercase<M>];

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type SuccessStatus = 200 | 201 | 202 | 203 | 204 | 205 | 206;

/** The body of a successful answer: the union of its 2xx JSON bodies (`undefined` for a 204). */
export type ResponseOf<Op> = Op extends { responses: infer R } ? { [S in keyof R]: S extends SuccessStatus ? JsonOf<R[S]> : never }[keyof R] : never;

/** The JSON request body an operation takes (`never` when it takes none). */
export type BodyOf<Op> = Op extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

type PathParamsOf<Op> = Op extends { parameters: { path: infer X } } ? X : never;
type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? Exclude<Q, undefined> : never;

/**
 * A query: its names are checked; each value may also be given as text (a flag as typed), since a
 * query string is text on the wire, and may be left `undefined` (left out of the URL), since the
 * server fills its defaults and answers 400 naming a missing one.
 */
export type QueryInput<Q> = { [K in keyof Q]?: Q[K] | string };

type IsNever<T> = [T] extends [never] ? true : false;
type RequiredWhen<Required extends boolean, T> = Required extends true ? T : Partial<T>;

/** The second argument of a call: `params` when the path has parameters, `query` when it takes one, `body` when it takes one. */
export type RequestInit<Op> = (IsNever<PathParamsOf<Op>> extends true ? { params?: undefined } : { params: PathParamsOf<Op> }) &
  (IsNever<QueryOf<Op>> extends true ? { query?: undefined } : RequiredWhen<{} extends QueryOf<Op> ? false : true, { query: QueryInput<QueryOf<Op>> }>) &
  (IsNever<BodyOf<Op>> extends true
    ? { body?: undefined }
    : RequiredWhen<Op extends { requestBody: { content: object } } ? true : false, { body: BodyOf<Op> }>) & {
    /** Per call: replace the client's timeout. */
    timeoutMs?: number;
  };

/** Whether the second argument may be left out (no path parameters, no required body). */
export type InitArgs<Op> = {} extends RequestInit<Op> ? [init?: RequestInit<Op>] : [init: RequestInit<Op>];
