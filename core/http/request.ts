import type { Request } from '@hapi/hapi';

/** Typed views of what joi already validated (hapi types them loosely). */
export const paramsOf = (request: Request) => request.params as Record<string, string>;
export const queryOf = <T>(request: Request) => request.query as unknown as T;
export const payloadOf = <T>(request: Request) => request.payload as T;
