/** The work was stopped from outside (job cancelled, lease lost, worker stopping): nothing is reported for it. */
export class Aborted extends Error {
  override name = 'Aborted';
}
