// The conversation: the reply to every referee-to-bot vector, and the rules of SPEC section 3
// (ids, reply_to, unknown fields, unknown types).
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const { Session, settings, socketOptions } = require('../bot.js');

const VECTORS = path.join(__dirname, '..', '..', '..', 'protocol', 'vectors');
const vector = (name) => JSON.parse(fs.readFileSync(path.join(VECTORS, `${name}.json`), 'utf8'));

test('hello carries the versions, the name and the token', () => {
  const hello = new Session().hello('secret');
  assert.deepEqual(Object.keys(hello).sort(), Object.keys(vector('hello')).sort());
  assert.equal(hello.type, 'hello');
  assert.equal(hello.version, '1.2');
  assert.equal(hello.id, 1);
  assert.deepEqual(hello.versions, ['1.2', '1.1', '1.0']);
  assert.equal(hello.token, 'secret');
});

test('each request gets its reply, naming the request id', () => {
  const session = new Session();
  session.hello('t');
  assert.deepEqual(session.handle(vector('welcome')), {});
  const start = vector('match_start');
  assert.deepEqual(session.handle(start).reply, {
    version: '1.2',
    type: 'ready',
    id: 2,
    reply_to: start.id,
  });
  for (const name of ['decide_exchange', 'decide_bid', 'decide_play']) {
    const request = vector(name);
    const { reply } = session.handle(request);
    assert.equal(reply.type, 'act');
    assert.equal(reply.reply_to, request.id);
    assert.ok(request.legal.includes(reply.action), `${reply.action} is not legal`);
  }
  const ping = vector('ping');
  assert.equal(session.handle(ping).reply.type, 'pong');
  assert.equal(session.handle(ping).reply.reply_to, ping.id);
});

test('our ids are unique and increasing', () => {
  const session = new Session();
  const ids = [session.hello('t').id];
  for (let i = 0; i < 5; i++) ids.push(session.handle(vector('ping')).reply.id);
  assert.deepEqual(ids, [1, 2, 3, 4, 5, 6]);
});

test('messages without an answer', () => {
  const session = new Session();
  for (const name of ['welcome', 'match_end', 'match_end_forfeit', 'error']) {
    assert.deepEqual(session.handle(vector(name)), {}, name);
  }
});

test('shutdown exits 0, reject exits non-zero', () => {
  assert.deepEqual(new Session().handle(vector('shutdown')), { exit: 0 });
  assert.deepEqual(new Session().handle(vector('reject')), { exit: 1 });
});

test('unknown fields are ignored', () => {
  const request = { ...vector('decide_play'), hint: 'from a later minor version' };
  request.observation = { ...request.observation, weather: 'sunny' };
  const { reply } = new Session().handle(request);
  assert.ok(request.legal.includes(reply.action));
});

test('an unknown type is answered with error unknown_type', () => {
  const { reply, exit } = new Session().handle({ version: '1.1', type: 'gossip', id: 9 });
  assert.equal(exit, undefined);
  assert.equal(reply.type, 'error');
  assert.equal(reply.code, 'unknown_type');
  assert.equal(reply.reply_to, 9);
});

test('a message that is not a map is answered with error malformed', () => {
  for (const bad of [null, [1, 2], 'text', { id: 3 }]) {
    const { reply } = new Session().handle(bad);
    assert.equal(reply.code, 'malformed');
  }
});

test('arguments override the environment', () => {
  const env = { AEGIS_ENDPOINT: 'ipc:///tmp/a', AEGIS_TOKEN: 'env' };
  assert.deepEqual(settings([], env), { endpoint: 'ipc:///tmp/a', token: 'env' });
  assert.deepEqual(settings(['--endpoint', 'tcp://h:1', '--token=arg'], env), {
    endpoint: 'tcp://h:1',
    token: 'arg',
  });
});

test('a remote bot takes its CurveZMQ keys from flags or the environment', () => {
  const env = {
    AEGIS_ENDPOINT: 'tcp://h:1',
    AEGIS_SERVER_KEY: 'S'.repeat(40),
    AEGIS_PUBLIC_KEY: 'P'.repeat(40),
    AEGIS_SECRET_KEY: 'X'.repeat(40),
  };
  const found = settings([], env);
  assert.deepEqual(found.curve, {
    serverKey: 'S'.repeat(40),
    publicKey: 'P'.repeat(40),
    secretKey: 'X'.repeat(40),
  });
  const flagged = settings(['--server-key', 'T'.repeat(40), '--public-key=' + 'Q'.repeat(40)], env);
  assert.equal(flagged.curve.serverKey, 'T'.repeat(40));
  assert.equal(flagged.curve.publicKey, 'Q'.repeat(40));
  assert.equal(flagged.curve.secretKey, 'X'.repeat(40));
  assert.equal(settings([], { AEGIS_ENDPOINT: 'ipc:///a' }).curve, undefined);
  const options = socketOptions(found.curve);
  assert.equal(options.curveServerKey, 'S'.repeat(40));
  assert.equal(options.linger, 0);
  assert.deepEqual(socketOptions(undefined), { linger: 0 });
});

test('the envelope carries the version welcome named', () => {
  const session = new Session();
  session.hello('t');
  session.handle({ ...vector('welcome'), protocol: '1.0' });
  assert.equal(session.handle(vector('match_start')).reply.version, '1.0');
});

test('the same seed gives the same choices, another seed may not', () => {
  const plays = (seed) => {
    const session = new Session();
    session.hello('t');
    session.handle(vector('welcome'));
    session.handle({ ...vector('match_start'), seed });
    return Array.from({ length: 20 }, () => session.random());
  };
  assert.deepEqual(plays(7), plays(7));
  assert.notDeepEqual(plays(7), plays(8));
  assert.notDeepEqual(plays(2 ** 53 - 1), plays(2 ** 53 - 2));
  for (const value of plays(2 ** 53 - 1)) assert.ok(value >= 0 && value < 1);
});
