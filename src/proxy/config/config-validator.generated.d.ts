/** The first error the generated validator found (ajv's error object, the fields the proxy reads). */
export interface SchemaError {
  readonly keyword: string;
  readonly instancePath: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
}

/**
 * The proxy configuration's validator, generated from `proxyConfigSchema` (see
 * config-validator.generated.js): true when `data` matches; otherwise `errors` holds the first error.
 */
export interface ConfigValidator {
  (data: unknown): boolean;
  errors?: SchemaError[] | null;
}

declare const validate: ConfigValidator;

export { validate };
export default validate;
