// The msgpack codec against the protocol's golden vectors (protocol/vectors/README.md):
// decoding NAME.msgpack gives NAME.json, and encoding NAME.json with sorted keys gives back
// the exact bytes of NAME.msgpack.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const { decode, decodeMessage, encode } = require('../bot.js');

const VECTORS = path.join(__dirname, '..', '..', '..', 'protocol', 'vectors');
const names = fs
  .readdirSync(VECTORS)
  .filter((file) => file.endsWith('.json'))
  .map((file) => file.slice(0, -'.json'.length));

const load = (name) => ({
  json: JSON.parse(fs.readFileSync(path.join(VECTORS, `${name}.json`), 'utf8')),
  bytes: fs.readFileSync(path.join(VECTORS, `${name}.msgpack`)),
});

test('there are vectors', () => {
  assert.ok(names.length >= 17, `only ${names.length} vectors in ${VECTORS}`);
});

for (const name of names) {
  test(`decode ${name}.msgpack`, () => {
    const { json, bytes } = load(name);
    assert.deepEqual(decode(bytes), json);
  });

  test(`encode ${name}.json byte for byte`, () => {
    const { json, bytes } = load(name);
    assert.deepEqual(Buffer.from(encode(json, { sortKeys: true })), bytes);
  });
}

test('a message of several frames, or not msgpack, is not a message', () => {
  const { bytes } = load('ping');
  assert.equal(decodeMessage([bytes, bytes]), null);
  assert.equal(decodeMessage([Buffer.from([0xc1])]), null); // 0xc1 is never used
  assert.deepEqual(decodeMessage([bytes]), load('ping').json);
});
