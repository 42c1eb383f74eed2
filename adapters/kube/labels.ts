import Joi from 'joi';

/** A Kubernetes label value and key, as the API server accepts them. */
export const labelValue = Joi.string()
  .max(63)
  .pattern(/^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/);
export const labelKey = Joi.string()
  .max(253)
  .pattern(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
