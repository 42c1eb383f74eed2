/** The guard moved to the kernel (the inference proxy uses it too); kept here so the webhook files' imports stay. */
export * from '../../core/http/address-guard.ts';
