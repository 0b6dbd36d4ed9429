// Reads a tickwork recording with Foxglove's own MCAP reader (@mcap/core, zstd from
// @mcap/support), checks every channel's JSON Schema against the rules of Foxglove's JSON
// Schema parser (parseJsonSchema of @foxglove/mcap-support, which npm does not publish:
// its rules are restated below), and validates every message: well-known ones against
// Foxglove's published JSON schemas (@foxglove/schemas/jsonschema), the others against
// their own channel schema, and holds each well-known message to what Foxglove's 3D panel
// draws (RENDER_RULES). Prints one JSON object; exits 1 on any problem.
"use strict";
const fs = require("fs");
const { McapIndexedReader } = require("@mcap/core");
const { loadDecompressHandlers } = require("@mcap/support");
const foxglove = require("@foxglove/schemas/jsonschema");
const Ajv2020 = require("ajv/dist/2020").default;

// The rules of parseJsonSchema: an object has properties; a field is a numeric-const oneOf,
// or has one type string: boolean, string (no contentEncoding but base64), number,
// integer, object (recursively), or array whose items are one of those scalars or an object.
function parserProblems(schema, path) {
  const problems = [];
  if (schema.type !== "object") problems.push(`${path}: expected "type": "object"`);
  if (schema.properties == null || typeof schema.properties !== "object") {
    problems.push(`${path}: an object without properties`);
    return problems;
  }
  for (const [name, field] of Object.entries(schema.properties)) {
    const where = `${path}.${name}`;
    if (Array.isArray(field.oneOf)) {
      if (!field.oneOf.every((alt) => typeof alt.const === "number")) {
        problems.push(`${where}: oneOf alternatives must have number values`);
      }
      continue;
    }
    switch (field.type) {
      case "boolean":
      case "number":
      case "integer":
        break;
      case "string":
        if (field.contentEncoding !== undefined && field.contentEncoding !== "base64") {
          problems.push(`${where}: unsupported contentEncoding`);
        }
        break;
      case "object":
        problems.push(...parserProblems(field, where));
        break;
      case "array": {
        const items = field.items;
        if (items == null || typeof items !== "object") {
          problems.push(`${where}: an array without items`);
        } else if (items.type === "object") {
          problems.push(...parserProblems(items, `${where}[]`));
        } else if (!["boolean", "string", "number", "integer"].includes(items.type)) {
          problems.push(`${where}: unsupported item type ${JSON.stringify(items.type)}`);
        }
        break;
      }
      default:
        problems.push(`${where}: unsupported type ${JSON.stringify(field.type)}`);
    }
  }
  return problems;
}

// What Foxglove's 3D panel refuses to draw of a well-known message beyond its schema
// (restated from its LaserScans renderable): a LaserScan's intensities are none or one
// per range ("LaserScan intensities length (...) does not match ranges length (...)").
const RENDER_RULES = {
  LaserScan: (value) =>
    value.intensities.length !== 0 && value.intensities.length !== value.ranges.length
      ? [`intensities length (${value.intensities.length}) does not match ranges length (${value.ranges.length})`]
      : [],
};

async function main() {
  const path = process.argv[2];
  const fd = fs.openSync(path, "r");
  const size = fs.fstatSync(fd).size;
  const readable = {
    size: async () => BigInt(size),
    read: async (offset, length) => {
      const buf = Buffer.alloc(Number(length));
      fs.readSync(fd, buf, 0, Number(length), Number(offset));
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    },
  };
  const reader = await McapIndexedReader.Initialize({
    readable,
    decompressHandlers: await loadDecompressHandlers(),
  });
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const out = { profile: reader.header.profile, channels: {}, problems: [] };
  const validators = new Map();
  const renderRules = new Map();
  for (const channel of reader.channelsById.values()) {
    const schema = reader.schemasById.get(channel.schemaId);
    const parsed = JSON.parse(new TextDecoder().decode(schema.data));
    const problems = parserProblems(parsed, channel.topic);
    out.problems.push(...problems);
    const wellKnown = schema.name.startsWith("foxglove.") ? schema.name.slice(9) : null;
    let validator;
    if (wellKnown !== null) {
      if (!(wellKnown in foxglove)) out.problems.push(`${channel.topic}: no Foxglove schema ${schema.name}`);
      else validator = ajv.compile(foxglove[wellKnown]);
    } else {
      const own = { ...parsed };
      delete own.$schema;
      validator = ajv.compile(own);
    }
    validators.set(channel.id, validator);
    if (wellKnown !== null && wellKnown in RENDER_RULES) renderRules.set(channel.id, RENDER_RULES[wellKnown]);
    out.channels[channel.topic] = {
      schema: schema.name,
      encoding: schema.encoding,
      message_encoding: channel.messageEncoding,
      parser_problems: problems.length,
      messages: 0,
      invalid: 0,
    };
  }
  const decoder = new TextDecoder();
  for await (const message of reader.readMessages()) {
    const channel = reader.channelsById.get(message.channelId);
    const entry = out.channels[channel.topic];
    entry.messages += 1;
    const value = JSON.parse(decoder.decode(message.data));
    const validate = validators.get(message.channelId);
    if (validate && !validate(value)) {
      entry.invalid += 1;
      if (entry.invalid <= 3) {
        out.problems.push(`${channel.topic}: ${ajv.errorsText(validate.errors)}`);
      }
    } else if (renderRules.has(message.channelId)) {
      const refused = renderRules.get(message.channelId)(value);
      if (refused.length) {
        entry.invalid += 1;
        if (entry.invalid <= 3) out.problems.push(...refused.map((r) => `${channel.topic}: ${r}`));
      }
    }
  }
  fs.closeSync(fd);
  console.log(JSON.stringify(out));
  process.exit(out.problems.length ? 1 : 0);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(2);
});
