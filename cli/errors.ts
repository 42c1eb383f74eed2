/** The three ways a command fails, each with its own exit code (see `exitCodeFor` in main.ts). */

/** The command line is wrong: exit 2 and show the usage text. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Something outside the server went wrong (files, network, ssh-keygen): exit 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The server answered with an error status; `message` comes from its `{statusCode, error, message}` body. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly body: unknown,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}
