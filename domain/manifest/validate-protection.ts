import { type Problems, at, expectObject, index, isObject, isString, unknownKeys } from './problems.ts';

const isCount = (v: unknown, min: number): v is number => Number.isInteger(v) && (v as number) >= min;

/**
 * `environments.<name>.protection`: required_reviewers ({user} or {group}), required_approvals (at
 * least 1, at most the reviewers listed), allowed_refs (glob patterns), wait_seconds (0 or more).
 */
export function checkProtection(problems: Problems, value: unknown, path: string): void {
  if (!expectObject(problems, value, path)) return;
  unknownKeys(problems, value, ['required_reviewers', 'required_approvals', 'allowed_refs', 'wait_seconds'], path);
  const reviewers = value.required_reviewers;
  const reviewersPath = at(path, 'required_reviewers');
  if (reviewers !== undefined) {
    if (!Array.isArray(reviewers))
      problems.add(reviewersPath, 'required_reviewers must be a list of {user: <e-mail or usr_ id>} or {group: <group name or id>}');
    else
      reviewers.forEach((r, i) => {
        const keys = isObject(r) ? Object.keys(r) : [];
        if (!isObject(r) || keys.length !== 1 || !['user', 'group'].includes(keys[0]) || !isString(r[keys[0]]))
          problems.add(index(reviewersPath, i), 'a reviewer is {user: <e-mail or usr_ id>} or {group: <group name or id>}');
      });
  }
  const approvals = value.required_approvals;
  if (approvals !== undefined) {
    if (!isCount(approvals, 1)) problems.add(at(path, 'required_approvals'), 'required_approvals must be a whole number, at least 1');
    else if (!Array.isArray(reviewers) || reviewers.length === 0)
      problems.add(at(path, 'required_approvals'), 'required_approvals needs required_reviewers to approve');
    else if (!reviewers.some((r) => isObject(r) && 'group' in r) && approvals > reviewers.length)
      problems.add(at(path, 'required_approvals'), `required_approvals ${approvals} is more than the ${reviewers.length} reviewers listed could give`);
  }
  const refs = value.allowed_refs;
  if (refs !== undefined && !(Array.isArray(refs) && refs.length > 0 && refs.every(isString)))
    problems.add(at(path, 'allowed_refs'), 'allowed_refs must be a non-empty list of branch or tag patterns ("main", "release/*", "v*")');
  if (value.wait_seconds !== undefined && !isCount(value.wait_seconds, 0))
    problems.add(at(path, 'wait_seconds'), 'wait_seconds must be a whole number of seconds, 0 or more');
}
