/** See config-validator-source.mjs. */
export declare const GENERATED_PATH: string;
export declare function configValidatorSource(schema: object): string;
