/**
 * The public extension API of svc: what third-party adapter and harness packages import.
 * Nothing here needs decorators or the container.
 */
import type { AdapterDefinition } from './adapters.ts';
import { HARNESS_NAME, type HarnessDefinition } from './ports/harness.ts';

export type { AdapterDefinition, AdapterDeps, PortKind, PortTypes } from './adapters.ts';
export type { Scheduler, ScheduledJobHandler, DefineOptions } from './ports/scheduler.ts';
export type { Runtime, RunningProcess, ProcessSpec, ProcessExit, OutputLine } from './ports/runtime.ts';
export type { VcsHost, VcsDelivery, PullRequestInput, PullRequest } from './ports/vcshost.ts';
export type { ChatApp, ChatDelivery, ChatMessage, PostedMessage } from './ports/chatapp.ts';
export type { InboundRequest, InboundEvent, Verification } from './ports/integrations.ts';
export { HostApiError } from './ports/integrations.ts';
export type {
  HarnessDefinition,
  HarnessInput,
  HarnessInvocation,
  HarnessEvent,
  HarnessVariant,
  HarnessCapabilities,
  HarnessCredentials,
  PermissionPolicy,
  ReasoningEffort,
} from './ports/harness.ts';
export { harnessContract, messageText, HarnessContractError } from './harness-contract.ts';
export { planProgress, todoItems, type PlanItem } from './harness-progress.ts';
export type { HarnessContractCheck, HarnessContractFixtures } from './harness-contract.ts';
export type { Builder, BuildRequest, BuiltImage, ServiceBuild, PushTarget, BuildErrorClass } from './ports/builder.ts';
export { BuildFailure, BUILD_ERROR_CLASSES, isBuildFailure } from './ports/builder.ts';
export { builderContract, BuilderContractError, type BuilderContractCheck, type BuilderContractFixtures } from './builder-contract.ts';

/** Declares an adapter for one port; `options` validates (and defaults) its config block. */
export function defineAdapter<T, O = Record<string, unknown>>(definition: AdapterDefinition<T, O>): AdapterDefinition<T, O> {
  for (const key of ['kind', 'name'] as const) {
    if (typeof definition[key] !== 'string' || !definition[key]) throw new TypeError(`defineAdapter: ${key} must be a non-empty string`);
  }
  if (typeof definition.create !== 'function') throw new TypeError(`defineAdapter(${definition.name}): create must be a function`);
  return definition;
}

/** Declares a harness: how to invoke a coding CLI and how to parse its output stream. */
export function defineHarness(definition: HarnessDefinition): HarnessDefinition {
  if (!definition || typeof definition !== 'object') throw new TypeError('defineHarness: expected a harness definition object');
  if (!HARNESS_NAME.test(definition.id ?? '')) throw new TypeError(`defineHarness: id '${definition.id}' must be lower-case letters, digits, _ or -`);
  for (const fn of ['build', 'parseLine'] as const) {
    if (typeof definition[fn] !== 'function') throw new TypeError(`defineHarness(${definition.id}): ${fn} must be a function`);
  }
  if (typeof definition.description !== 'string' || !definition.description.trim())
    throw new TypeError(`defineHarness(${definition.id}): description must be a non-empty string`);
  if (
    definition.aliases !== undefined &&
    !(Array.isArray(definition.aliases) && definition.aliases.every((a) => typeof a === 'string' && HARNESS_NAME.test(a)))
  ) {
    throw new TypeError(`defineHarness(${definition.id}): aliases must be lower-case names`);
  }
  if (definition.defaultModel !== undefined && !(typeof definition.defaultModel === 'string' && definition.defaultModel.trim()))
    throw new TypeError(`defineHarness(${definition.id}): defaultModel must be a non-empty string when set`);
  return definition;
}
