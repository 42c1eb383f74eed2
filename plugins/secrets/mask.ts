// Masking lives in core so that the worker (another domain) applies the same rule to execution output.
export { MASK, MIN_MASKED_CHARS, maskSecrets, secretMasker } from '../../core/secrets/mask.ts';
