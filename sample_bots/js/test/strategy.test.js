// The card logic (RULES.md) and the choice of actions.
'use strict';

const assert = require('node:assert/strict');
const { test } = require('node:test');

const { beatsInSuit, chooseAction, followerWins, seededRandom } = require('../bot.js');

// An observation with just the fields the strategy reads; trump H, key card 7H.
function observation(fields) {
  return {
    role: 'master',
    trump: 'H',
    killers: ['7S', '7D', '7C'],
    master_exchange_count: 0,
    lead: null,
    ...fields,
  };
}

test('inside a suit K > Q > J > 10 > … > 2, and the Ace beats only K, Q and J', () => {
  assert.ok(beatsInSuit('KS', 'QS'));
  assert.ok(beatsInSuit('10S', '9S'));
  assert.ok(beatsInSuit('AS', 'KS'));
  assert.ok(beatsInSuit('AS', 'JS'));
  assert.ok(!beatsInSuit('AS', '10S'));
  assert.ok(beatsInSuit('2S', 'AS'));
  assert.ok(beatsInSuit('JS', '10S'));
});

test('who wins a trick', () => {
  const killers = ['7S', '7D', '7C'];
  assert.ok(followerWins('5S', '9S', 'H', killers)); // higher card of the led suit
  assert.ok(!followerWins('5S', '2H', 'C', killers)); // a discard loses
  assert.ok(followerWins('KS', '2H', 'H', killers)); // a trump on a non-trump lead
  assert.ok(followerWins('KH', '7C', 'H', killers)); // a killer on a trump lead
  assert.ok(!followerWins('KS', '7C', 'H', killers)); // a killer on a non-trump lead: a discard
  assert.ok(!followerWins('KH', '8C', 'H', killers)); // not a killer
});

test('the master keeps a good hand and exchanges a poor one once', () => {
  const legal = ['stop', 'exchange 2S 3D 4C', 'exchange 2S 3D 4C 5C'];
  const good = observation({ hand: ['KH', '2H', 'KS', '3D', '4C'] });
  assert.equal(chooseAction('exchange', good, legal), 'stop');
  const poor = observation({ hand: ['2S', 'KH', '3D', '4C', '5C'] });
  assert.equal(chooseAction('exchange', poor, legal), 'exchange 2S 3D 4C 5C');
  const again = observation({ hand: ['2S', 'KH', '3D', '4C', '5C'], master_exchange_count: 1 });
  assert.equal(chooseAction('exchange', again, legal), 'stop');
});

test('the slave exchanges its poor cards, or nothing', () => {
  const legal = ['exchange', 'exchange 2S', 'exchange 2S 3D'];
  const poor = observation({ role: 'slave', hand: ['2S', 'KH', 'QS', '3D', '7C'] });
  assert.equal(chooseAction('exchange', poor, legal), 'exchange 2S 3D');
  const good = observation({ role: 'slave', hand: ['AH', 'KH', 'QS', 'KD', '7C'] });
  assert.equal(chooseAction('exchange', good, legal), 'exchange');
});

test('an exchange is matched to the legal string whatever the order of its cards', () => {
  // The legal list here orders the cards differently from the hand.
  const legal = ['exchange', 'exchange 3D 2S'];
  const obs = observation({ role: 'slave', hand: ['2S', 'KH', 'QS', '3D', '7C'] });
  assert.equal(chooseAction('exchange', obs, legal), 'exchange 3D 2S');
});

test('bids follow the count of trumps and kings, within the legal range', () => {
  const masterLegal = ['bid 2', 'bid 3', 'bid 4', 'bid 5'];
  const strong = observation({ hand: ['KH', '9H', '5H', 'KS', '2D'] }); // 4 expected
  assert.equal(chooseAction('bid', strong, masterLegal), 'bid 4');
  const weak = observation({ hand: ['2S', '3S', '5D', '6D', '8C'] }); // 0 expected
  assert.equal(chooseAction('bid', weak, masterLegal), 'bid 2');
  const slaveLegal = ['pass', 'bid 3', 'bid 4', 'bid 5'];
  assert.equal(chooseAction('bid', { ...strong, role: 'slave' }, slaveLegal), 'bid 3');
  assert.equal(chooseAction('bid', { ...weak, role: 'slave' }, slaveLegal), 'pass');
});

test('second to play: the cheapest winning card, else the cheapest card', () => {
  const hand = ['QS', '9S', '4S', '3H', '7C'];
  const legal = ['play QS', 'play 9S', 'play 4S'];
  assert.equal(chooseAction('play', observation({ hand, lead: '8S' }), legal), 'play 9S');
  assert.equal(chooseAction('play', observation({ hand, lead: 'KS' }), legal), 'play 4S');
  // Void in the led suit: trump it with the lowest trump.
  const voidInDiamonds = observation({ hand: ['KH', '2H', '3C'], lead: 'KD' });
  assert.equal(chooseAction('play', voidInDiamonds, ['play KH', 'play 2H', 'play 3C']), 'play 2H');
  // Void in trump on a trump lead: a killer wins it.
  const voidInTrump = observation({ hand: ['7C', '2D'], lead: 'KH' });
  assert.equal(chooseAction('play', voidInTrump, ['play 7C', 'play 2D']), 'play 7C');
});

test('leading: the highest trump, else the strongest card', () => {
  const legal = (hand) => hand.map((card) => `play ${card}`);
  const withTrumps = observation({ hand: ['AH', 'QH', 'KS', '5D'] });
  assert.equal(chooseAction('play', withTrumps, legal(withTrumps.hand)), 'play QH');
  const noTrumps = observation({ hand: ['AS', 'JS', '10D', '5C'] });
  assert.equal(chooseAction('play', noTrumps, legal(noTrumps.hand)), 'play JS');
});

test('the answer is always legal', () => {
  const obs = observation({ hand: ['2S'] });
  assert.equal(chooseAction('play', obs, ['play 2S']), 'play 2S');
  assert.equal(chooseAction('mystery', obs, ['stop']), 'stop');
});

test('ties between cards of equal value are broken by the seeded random numbers', () => {
  // Leading without trumps: KS and KH are the strongest cards, worth the same.
  const hand = ['KS', 'KH', '4C', '2C', '3C'];
  const obs = observation({ hand, trump: 'D', killers: [] });
  const legal = hand.map((card) => `play ${card}`);
  assert.equal(chooseAction('play', obs, legal), 'play KS'); // no seed: the first listed
  const seen = new Set();
  for (let seed = 0; seed < 40; seed += 1) {
    const choice = chooseAction('play', obs, legal, seededRandom(seed));
    assert.ok(['play KS', 'play KH'].includes(choice), choice);
    assert.equal(choice, chooseAction('play', obs, legal, seededRandom(seed)));
    seen.add(choice);
  }
  assert.equal(seen.size, 2);
});
