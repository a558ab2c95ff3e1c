#!/usr/bin/env node
// A sample Aegis bot in JavaScript, written from protocol/SPEC.md alone.
//
// It connects a ZeroMQ DEALER socket to the referee, says hello, and then answers every
// request: match_start -> ready, decide -> act, ping -> pong. Each message is one msgpack map
// in one ZeroMQ frame. The strategy is a few lines of common sense (see "Strategy" below).
//
// Run it with the referee: `aegis-ref match js random` (see README.md).
'use strict';

const { parseArgs } = require('node:util');
const { encode, decode } = require('@msgpack/msgpack');

// Every protocol version this bot speaks (SPEC section 3): 1.1 added match_start's seed, 1.2
// its time control's clock (which this bot, answering at once, has no use for).
const PROTOCOL_VERSIONS = ['1.2', '1.1', '1.0'];
const BOT_NAME = 'js';

// ---------------------------------------------------------------------------------------------
// Cards (RULES.md). A card is rank then suit: "AS", "10H", "KD".

const rankOf = (card) => card.slice(0, -1);
const suitOf = (card) => card.slice(-1);
const isFace = (card) => ['K', 'Q', 'J'].includes(rankOf(card));

// Strength inside a suit as one number: K 13, Q 12, J 11, then 10 … 2. The Ace beats only K, Q
// and J and loses to 10 … 2, so like a 4 it loses to nine cards of its suit: it counts as 4.
function strength(card) {
  const rank = rankOf(card);
  return { K: 13, Q: 12, J: 11, A: 4 }[rank] ?? Number(rank);
}

// Does `card` beat `other` of the same suit? Exact, with the Ace rule.
function beatsInSuit(card, other) {
  if (rankOf(card) === 'A') return isFace(other);
  if (rankOf(other) === 'A') return !isFace(card);
  return strength(card) > strength(other);
}

// Does the second card of a trick win it? The follower must follow suit when able, so a
// card of another suit means the follower is void in the led suit (RULES.md, "Play").
function followerWins(lead, card, trump, killers) {
  if (suitOf(card) === suitOf(lead)) return beatsInSuit(card, lead); // 1. same suit
  if (suitOf(lead) !== trump) return suitOf(card) === trump; //           2. trumped
  return killers.includes(card); //                                       3. killer on a trump lead
}

// ---------------------------------------------------------------------------------------------
// Randomness from the match's seed (SPEC section 5, "Reproducibility"): the same match gets
// the same choices, however and wherever it is played. A small generator (mulberry32, 32 bits
// of state) is plenty for breaking ties; the seed may be up to 2^53 - 1.

function seededRandom(seed) {
  let state = (seed % 2 ** 32 ^ Math.floor(seed / 2 ** 32)) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

// Without a seed (a 1.0 referee), ties go to the first card listed.
const firstOfTies = () => 0;

// ---------------------------------------------------------------------------------------------
// Strategy: every function gets the observation (SPEC section 7), the legal actions and the
// match's random numbers (for ties), and returns an action string.

// A card worth keeping: a trump, a killer, or a king or queen.
function worthKeeping(card, obs) {
  return suitOf(card) === obs.trump || obs.killers.includes(card) || strength(card) >= 12;
}

function chooseExchange(obs) {
  const poor = obs.hand.filter((card) => !worthKeeping(card, obs));
  // Every round the master exchanges in raises its smallest bid by one: the master
  // exchanges at most once, and only a poor hand. The slave's exchanges cost nothing.
  if (obs.role === 'master' && (obs.master_exchange_count > 0 || poor.length < 3)) {
    return 'stop';
  }
  return ['exchange', ...poor].join(' '); // "exchange" alone: the slave keeps its hand
}

function chooseBid(obs, legal) {
  // Tricks we expect: one per trump and one per king (a led king loses only to its ace).
  const expected = obs.hand.filter((c) => suitOf(c) === obs.trump || rankOf(c) === 'K').length;
  const bids = legal.filter((a) => a.startsWith('bid ')).map((a) => Number(a.slice(4)));
  if (bids.length === 0) return 'pass';
  const lowest = Math.min(...bids);
  const highest = Math.max(...bids);
  if (obs.role === 'master') {
    // The master must bid: the estimate, kept within the legal range.
    return `bid ${Math.max(lowest, Math.min(expected, highest))}`;
  }
  // The slave overbids (with the smallest legal bid) only when the hand should make it.
  return lowest <= expected ? `bid ${lowest}` : 'pass';
}

function choosePlay(obs, legal, random = firstOfTies) {
  const cards = legal.filter((a) => a.startsWith('play ')).map((a) => a.slice(5));
  // What a card is worth keeping for later: trumps most, then killers, then by strength.
  const value = (c) =>
    strength(c) + (suitOf(c) === obs.trump ? 30 : 0) + (obs.killers.includes(c) ? 10 : 0);
  // A card of the list with the lowest (or highest) value; a tie is broken at random.
  const pick = (list, better) => {
    const best = list.reduce((top, c) => (better(value(c), value(top)) ? c : top));
    const ties = list.filter((c) => value(c) === value(best));
    return ties[Math.floor(random() * ties.length)];
  };
  const cheapest = (list) => pick(list, (a, b) => a < b);
  const dearest = (list) => pick(list, (a, b) => a > b);
  if (obs.lead) {
    // Second to play: the cheapest card that wins the trick, else the cheapest card.
    const winners = cards.filter((c) => followerWins(obs.lead, c, obs.trump, obs.killers));
    return `play ${cheapest(winners.length > 0 ? winners : cards)}`;
  }
  // Leading: the highest trump, else the strongest card.
  return `play ${dearest(cards)}`;
}

// The action for a `decide` request, always one of the strings in `legal`.
function chooseAction(decision, obs, legal, random = firstOfTies) {
  const choose = { exchange: chooseExchange, bid: chooseBid, play: choosePlay }[decision];
  const choice = choose ? choose(obs, legal, random) : legal[0];
  // The cards of an exchange may come in any order: compare the words, not the strings.
  const words = (action) => action.split(' ').sort().join(' ');
  return legal.find((action) => words(action) === words(choice)) ?? legal[0];
}

// ---------------------------------------------------------------------------------------------
// The conversation (SPEC sections 3-5). A Session turns each message from the referee into
// the reply to send (or none) and tells when to exit; it does no I/O, so tests can drive it.

class Session {
  constructor(name = BOT_NAME) {
    this.name = name;
    this.nextId = 1; // our message ids: unique and increasing on the connection
    this.protocol = PROTOCOL_VERSIONS[0]; // until welcome names the version we speak
    this.random = firstOfTies;
  }

  // A message of ours: the envelope (version, type, id) plus the given fields.
  message(type, fields = {}) {
    return { version: this.protocol, type, id: this.nextId++, ...fields };
  }

  hello(token) {
    return this.message('hello', {
      versions: PROTOCOL_VERSIONS,
      name: this.name,
      author: 'aegis-ref sample bots',
      bot_version: '1.0',
      token: token ?? '',
    });
  }

  // Returns { reply, exit }: the message to send, if any, and the exit code, if it is time.
  handle(msg) {
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
      return { reply: this.error(null, 'malformed', 'a message must be one msgpack map') };
    }
    if (typeof msg.type !== 'string') {
      return { reply: this.error(msg.id, 'malformed', 'a message needs a string type') };
    }
    switch (msg.type) {
      case 'welcome':
        log(`welcome: protocol ${msg.protocol}, referee ${msg.referee}`);
        if (PROTOCOL_VERSIONS.includes(msg.protocol)) this.protocol = msg.protocol;
        return {};
      case 'reject': // our hello was refused: nothing more to do
        log(`rejected (${msg.code}): ${msg.reason}`);
        return { exit: 1 };
      case 'match_start':
        log(`match ${msg.match_id}: seat ${msg.seat} against ${msg.opponent}`);
        // Reseed at every match: its choices then depend on the match alone.
        this.random = Number.isSafeInteger(msg.seed) ? seededRandom(msg.seed) : firstOfTies;
        return { reply: this.message('ready', { reply_to: msg.id }) };
      case 'decide':
        return { reply: this.message('act', { reply_to: msg.id, action: this.decide(msg) }) };
      case 'ping':
        return { reply: this.message('pong', { reply_to: msg.id }) };
      case 'match_end':
        log(`match ${msg.match_id} over: winner seat ${msg.result?.winner}`);
        return {};
      case 'error': // the referee found fault with a message of ours
        log(`referee error ${msg.code}: ${msg.message}`);
        return {};
      case 'shutdown':
        log(`shutdown: ${msg.reason}`);
        return { exit: 0 };
      default: // answer an unknown type with an error, then carry on
        return {
          reply: this.error(msg.id, 'unknown_type', `unknown message type ${msg.type}`),
        };
    }
  }

  decide(msg) {
    try {
      return chooseAction(msg.decision, msg.observation, msg.legal, this.random);
    } catch (error) {
      // A bug in the strategy should not forfeit the match: any legal action will do.
      log(`strategy failed (${error.message}); playing ${msg.legal[0]}`);
      return msg.legal[0];
    }
  }

  error(replyTo, code, text) {
    const reply_to = Number.isInteger(replyTo) ? replyTo : null;
    return this.message('error', { reply_to, code, message: text });
  }
}

// The referee keeps the last lines of stderr in the game record: log there, never stdout.
function log(text) {
  process.stderr.write(`[${BOT_NAME}] ${text}\n`);
}

// ---------------------------------------------------------------------------------------------
// Transport (SPEC section 1): a DEALER socket, one frame per message, msgpack maps.

// One ZeroMQ message (an array of frames) to a value; null if it is not one msgpack value.
function decodeMessage(frames) {
  if (frames.length !== 1) return null;
  try {
    return decode(frames[0]);
  } catch {
    return null;
  }
}

// --endpoint / --token override AEGIS_ENDPOINT / AEGIS_TOKEN; a remote bot's CurveZMQ keys
// (SPEC section 9) come from --server-key / --public-key / --secret-key or AEGIS_SERVER_KEY /
// AEGIS_PUBLIC_KEY / AEGIS_SECRET_KEY (Z85 text). Other arguments are ignored.
function settings(argv, env) {
  const { values } = parseArgs({
    args: argv,
    options: {
      endpoint: { type: 'string' },
      token: { type: 'string' },
      'server-key': { type: 'string' },
      'public-key': { type: 'string' },
      'secret-key': { type: 'string' },
    },
    strict: false,
  });
  const found = {
    endpoint: values.endpoint ?? env.AEGIS_ENDPOINT,
    token: values.token ?? env.AEGIS_TOKEN,
  };
  const serverKey = values['server-key'] ?? env.AEGIS_SERVER_KEY;
  if (serverKey) {
    found.curve = {
      serverKey,
      publicKey: values['public-key'] ?? env.AEGIS_PUBLIC_KEY,
      secretKey: values['secret-key'] ?? env.AEGIS_SECRET_KEY,
    };
  }
  return found;
}

// The DEALER's options. A remote bot encrypts with CurveZMQ and authenticates by its key
// pair; ZMTP heartbeats notice a referee whose machine went silent.
function socketOptions(curve) {
  const options = { linger: 0 }; // linger 0: exit at once, even with unsent data
  if (curve) {
    Object.assign(options, {
      curveServerKey: curve.serverKey,
      curvePublicKey: curve.publicKey,
      curveSecretKey: curve.secretKey,
      heartbeatInterval: 1000,
      heartbeatTimeout: 5000,
    });
  }
  return options;
}

// One connection: hello, then answer every request. Returns the exit code, or null when a
// remote bot's connection dropped (it then dials in again and says hello anew).
async function converse(zmq, { endpoint, token, curve }) {
  const socket = new zmq.Dealer(socketOptions(curve));
  let lost = false;
  if (curve) {
    socket.events.on('disconnect', () => {
      lost = true;
      socket.close(); // ends the loop below
    });
  }
  socket.connect(endpoint);
  const session = new Session();
  try {
    await socket.send(encode(session.hello(token)));
    for await (const frames of socket) {
      const { reply, exit } = session.handle(decodeMessage(frames));
      if (reply) await socket.send(encode(reply));
      if (exit !== undefined) return exit;
    }
  } catch (error) {
    if (!lost) throw error;
  } finally {
    if (!socket.closed) socket.close();
  }
  return lost ? null : 1;
}

async function main() {
  const found = settings(process.argv.slice(2), process.env);
  if (!found.endpoint) {
    log('no endpoint: set AEGIS_ENDPOINT or pass --endpoint URL');
    process.exit(2);
  }
  if (found.curve && !(found.curve.publicKey && found.curve.secretKey)) {
    log('a server key needs the bot\'s own public and secret keys too');
    process.exit(2);
  }
  const zmq = require('zeromq');
  if (found.curve && !zmq.capability.curve) {
    log('this build of zeromq has no CurveZMQ');
    process.exit(2);
  }
  for (;;) {
    const code = await converse(zmq, found);
    if (code !== null) process.exit(code);
    log('lost the connection to the referee; dialling in again');
    await new Promise((resolve) => setTimeout(resolve, 1000)); // not in a tight loop
  }
}

module.exports = {
  Session,
  beatsInSuit,
  chooseAction,
  decode,
  decodeMessage,
  encode,
  followerWins,
  seededRandom,
  settings,
  socketOptions,
  strength,
};

if (require.main === module) {
  main().catch((error) => {
    log(`fatal: ${error.stack}`);
    process.exit(1);
  });
}
