/**
 * JSON Schema to the subset node-llama-cpp compiles into a grammar (`GbnfJsonSchema`):
 * types, properties, required, closed objects, arrays with item counts, string lengths,
 * enums, consts, `anyOf`/`oneOf` and `$defs` references. Keywords a grammar cannot express
 * (`minimum`, `pattern` ...) are dropped here; the caller validates the parsed value against
 * the full schema afterwards (zod), so nothing is lost but the guarantee of that one keyword.
 */

const STRING_FORMATS = new Set(['date-time', 'time', 'date']);
const BASIC_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** A schema the grammar compiler cannot take at all (no type, or an unknown one). */
export class UnsupportedSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedSchemaError';
  }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function convert(node: unknown, path: string): Json {
  if (node === true || (isObject(node) && Object.keys(node).length === 0)) {
    throw new UnsupportedSchemaError(
      `${path}: an unconstrained value cannot be written as a grammar`,
    );
  }
  if (!isObject(node)) throw new UnsupportedSchemaError(`${path}: not a schema object`);
  const out: Json = {};
  if (typeof node.description === 'string') out.description = node.description;
  if (isObject(node.$defs)) {
    out.$defs = Object.fromEntries(
      Object.entries(node.$defs).map(([key, value]) => [
        key,
        convert(value, `${path}.$defs.${key}`),
      ]),
    );
  }
  if (typeof node.$ref === 'string') {
    if (!node.$ref.startsWith('#/$defs/')) {
      throw new UnsupportedSchemaError(
        `${path}: only #/$defs/ references are supported, got ${node.$ref}`,
      );
    }
    return { ...out, $ref: node.$ref };
  }
  if ('const' in node) return { ...out, const: node.const };
  if (Array.isArray(node.enum)) return { ...out, enum: node.enum };
  const alternatives = (node.anyOf ?? node.oneOf) as unknown;
  if (Array.isArray(alternatives)) {
    return {
      ...out,
      oneOf: alternatives.map((item, index) => convert(item, `${path}.anyOf.${index}`)),
    };
  }
  const type = node.type;
  if (Array.isArray(type)) {
    if (type.every((item) => typeof item === 'string' && BASIC_TYPES.has(item))) {
      return { ...out, type };
    }
    return {
      ...out,
      oneOf: type.map((item, index) => convert({ ...node, type: item }, `${path}.type.${index}`)),
    };
  }
  switch (type) {
    case 'object': {
      const properties = isObject(node.properties) ? node.properties : {};
      out.type = 'object';
      out.properties = Object.fromEntries(
        Object.entries(properties).map(([key, value]) => [key, convert(value, `${path}.${key}`)]),
      );
      if (Array.isArray(node.required)) out.required = node.required;
      if (node.additionalProperties === false || node.additionalProperties === undefined) {
        out.additionalProperties = false;
      } else if (
        isObject(node.additionalProperties) &&
        Object.keys(node.additionalProperties).length > 0
      ) {
        out.additionalProperties = convert(
          node.additionalProperties,
          `${path}.additionalProperties`,
        );
      } else {
        out.additionalProperties = true;
      }
      for (const key of ['minProperties', 'maxProperties'] as const) {
        if (typeof node[key] === 'number') out[key] = node[key];
      }
      return out;
    }
    case 'array': {
      out.type = 'array';
      if (node.items !== undefined && node.items !== true)
        out.items = convert(node.items, `${path}[]`);
      if (Array.isArray(node.prefixItems)) {
        out.prefixItems = node.prefixItems.map((item, index) => convert(item, `${path}[${index}]`));
      }
      for (const key of ['minItems', 'maxItems'] as const) {
        if (typeof node[key] === 'number') out[key] = node[key];
      }
      return out;
    }
    case 'string': {
      out.type = 'string';
      if (typeof node.format === 'string' && STRING_FORMATS.has(node.format)) {
        out.format = node.format;
        return out;
      }
      for (const key of ['minLength', 'maxLength'] as const) {
        if (typeof node[key] === 'number') out[key] = node[key];
      }
      return out;
    }
    case 'number':
    case 'integer':
    case 'boolean':
    case 'null':
      return { ...out, type };
    default:
      throw new UnsupportedSchemaError(
        `${path}: type ${JSON.stringify(type)} is not one a grammar can express`,
      );
  }
}

/**
 * The grammar-compilable form of a JSON Schema. Throws {@link UnsupportedSchemaError} when
 * the schema has a part no grammar can express (an unconstrained value); callers then fall
 * back to a plain JSON grammar and validate afterwards.
 */
export function toGrammarSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema;
  return convert(rest, '$');
}
