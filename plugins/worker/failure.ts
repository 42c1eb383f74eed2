/** The attempt cannot run or must fail: the message is the reason recorded on the attempt. */
export class WorkerFailure extends Error {
  override name = 'WorkerFailure';
}

/**
 * The attempt's harness cannot run on this worker (its binary or its credentials are missing, say
 * because the CLI vanished since the job was accepted): the attempt fails, naming the harness and
 * what is missing, and the worker reports its harnesses again at once.
 */
export class HarnessMissing extends WorkerFailure {
  override name = 'HarnessMissing';
}

/**
 * The job's git controls ask for what the repository does not have (a ref no branch, tag or commit
 * names; a branch that must exist): nothing is wrong with the repository cache, so it is not checked.
 */
export class RefMissing extends WorkerFailure {
  override name = 'RefMissing';
}
