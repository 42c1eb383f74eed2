/** The attempt cannot run or must fail: the message is the reason recorded on the attempt. */
export class WorkerFailure extends Error {
  override name = 'WorkerFailure';
}

/** The attempt was stopped from outside (job cancelled, lease lost, worker stopping): nothing is reported for it. */
export class Aborted extends Error {
  override name = 'Aborted';
}
