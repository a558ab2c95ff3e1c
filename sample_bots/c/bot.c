/* A sample Aegis bot in C, written from protocol/SPEC.md alone.
 *
 * It connects a ZeroMQ DEALER socket to the referee, says hello, and then answers every
 * request: match_start -> ready, decide -> act, ping -> pong; shutdown -> exit 0. Each message
 * is one msgpack map in one ZeroMQ frame. Libraries: libzmq and msgpack-c (its C API).
 * The strategy is a few lines of common sense (see "Strategy" below).
 *
 * Build with `make`; play with the referee: `aegis-ref match c random` (see README.md).
 */
#include <errno.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define BOT_NAME "c"
#define MAX_HAND 8          /* a hand holds 5 cards */
#define MAX_LEGAL 64        /* an exchange decision lists at most 32 actions */
#define MAX_ACTION 72       /* an action is at most 64 characters */
#define CARRY_ON (-1)       /* handle() returns this, or the exit code */
#define NO_ID (-1)          /* a reply_to that is nil */

typedef char Card[4];       /* rank then suit: "AS", "10H", "KD" */
typedef char Action[MAX_ACTION];

/* ---- Cards (RULES.md) ---------------------------------------------------------------- */

static char suit_of(const char *card) { return card[strlen(card) - 1]; }

static bool is_face(const char *card) {
    return card[0] == 'K' || card[0] == 'Q' || card[0] == 'J';
}

/* Strength inside a suit: K 13, Q 12, J 11, then 10 ... 2. The Ace beats only K, Q and J and
 * loses to 10 ... 2: like a 4, it loses to nine cards of its suit, so it counts as 4. */
static int strength(const char *card) {
    switch (card[0]) {
    case 'K': return 13;
    case 'Q': return 12;
    case 'J': return 11;
    case 'A': return 4;
    default: return atoi(card);
    }
}

/* Does `card` beat `other` of the same suit? Exact, with the Ace rule. */
static bool beats_in_suit(const char *card, const char *other) {
    if (card[0] == 'A') return is_face(other);
    if (other[0] == 'A') return !is_face(card);
    return strength(card) > strength(other);
}

/* ---- Strategy ------------------------------------------------------------------------ */

/* What the strategy needs from a `decide` request (SPEC sections 5 and 7). */
typedef struct {
    char kind[16];              /* exchange, bid or play */
    bool master;                /* our role this game */
    int master_exchange_count;  /* the master's bid must be above it */
    Card hand[MAX_HAND];
    int hand_size;
    Card key_card;              /* its suit is trump; its rank in other suits: the killers */
    Card lead;                  /* the card led to this trick, "" when we lead */
    Action legal[MAX_LEGAL];    /* every legal action */
    int legal_count;
    uint64_t *random;           /* the match's random numbers (NULL: ties go to the first) */
} Decision;

/* ---- Randomness from the match's seed (SPEC section 5, "Reproducibility") ------------ */

/* splitmix64: the same seed, the same numbers, on every machine. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Whether the n-th of n equally good candidates should replace the one kept (reservoir
 * sampling: each ends up chosen with probability 1/n); never without random numbers. */
static bool take_tie(const Decision *d, int n) {
    return d->random != NULL && next_random(d->random) % (uint64_t)n == 0;
}

static bool is_trump(const Decision *d, const char *card) {
    return suit_of(card) == suit_of(d->key_card);
}

static bool is_killer(const Decision *d, const char *card) {
    size_t rank = strlen(card) - 1;
    return !is_trump(d, card) && rank == strlen(d->key_card) - 1 &&
           strncmp(card, d->key_card, rank) == 0;
}

/* Does the second card of a trick win it? The follower must follow suit when able, so a card
 * of another suit means the follower is void in the led suit (RULES.md, "Play"). */
static bool follower_wins(const Decision *d, const char *lead, const char *card) {
    if (suit_of(card) == suit_of(lead)) return beats_in_suit(card, lead); /* same suit */
    if (!is_trump(d, lead)) return is_trump(d, card);                     /* trumped */
    return is_killer(d, card);                            /* a killer on a trump lead */
}

/* What a card is worth keeping for later: trumps most, then killers, then by strength. */
static int value(const Decision *d, const char *card) {
    return strength(card) + (is_trump(d, card) ? 30 : 0) + (is_killer(d, card) ? 10 : 0);
}

static void choose_exchange(const Decision *d, Action out) {
    int poor = 0; /* cards not worth keeping: not a trump, a killer, a king or a queen */
    strcpy(out, "exchange");
    for (int i = 0; i < d->hand_size; i++) {
        const char *card = d->hand[i];
        if (!is_trump(d, card) && !is_killer(d, card) && strength(card) < 12) {
            strcat(out, " ");
            strcat(out, card);
            poor++;
        }
    }
    /* Every round the master exchanges in raises its smallest bid by one: the master
     * exchanges at most once, and only a poor hand. The slave's exchanges cost nothing. */
    if (d->master && (d->master_exchange_count > 0 || poor < 3)) strcpy(out, "stop");
}

static void choose_bid(const Decision *d, Action out) {
    int expected = 0, lowest = 99, highest = 0;
    /* Tricks we expect: one per trump and one per king (a led king loses only to its ace). */
    for (int i = 0; i < d->hand_size; i++)
        if (is_trump(d, d->hand[i]) || d->hand[i][0] == 'K') expected++;
    for (int i = 0; i < d->legal_count; i++) {
        if (strncmp(d->legal[i], "bid ", 4) != 0) continue;
        int bid = atoi(d->legal[i] + 4);
        if (bid < lowest) lowest = bid;
        if (bid > highest) highest = bid;
    }
    if (highest == 0) {
        strcpy(out, "pass");
    } else if (d->master) { /* the master must bid: the estimate, within the legal range */
        int bid = expected < highest ? expected : highest;
        snprintf(out, MAX_ACTION, "bid %d", bid > lowest ? bid : lowest);
    } else if (lowest <= expected) { /* the slave overbids only when the hand should make it */
        snprintf(out, MAX_ACTION, "bid %d", lowest);
    } else {
        strcpy(out, "pass");
    }
}

static void choose_play(const Decision *d, Action out) {
    const char *best = NULL;
    int ties = 0; /* candidates as good as `best` so far; one of them is taken at random */
    for (int i = 0; i < d->legal_count; i++) {
        if (strncmp(d->legal[i], "play ", 5) != 0) continue;
        const char *card = d->legal[i] + 5;
        int better; /* > 0: card is better than best; 0: as good */
        if (!best) {
            better = 1;
        } else if (d->lead[0] == '\0') { /* leading: the highest trump, else the strongest */
            better = value(d, card) - value(d, best);
        } else { /* second: the cheapest card that wins the trick, else the cheapest card */
            bool wins = follower_wins(d, d->lead, card);
            bool best_wins = follower_wins(d, d->lead, best);
            better = wins != best_wins ? (wins ? 1 : -1) : value(d, best) - value(d, card);
        }
        if (better > 0) {
            best = card;
            ties = 1;
        } else if (better == 0 && take_tie(d, ++ties)) {
            best = card;
        }
    }
    snprintf(out, MAX_ACTION, "play %s", best ? best : "");
}

/* Is `word` one of the space-separated words of `text`? */
static bool has_word(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = text; (p = strstr(p, word)) != NULL; p += n)
        if ((p == text || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

/* Same words, in any order? (The cards of an exchange may come in any order.) */
static bool same_words(const char *a, const char *b) {
    int words_a = 1, words_b = 1;
    for (const char *p = a; *p; p++) words_a += *p == ' ';
    for (const char *p = b; *p; p++) words_b += *p == ' ';
    if (words_a != words_b) return false;
    Action copy;
    snprintf(copy, sizeof copy, "%s", a);
    for (char *word = strtok(copy, " "); word; word = strtok(NULL, " "))
        if (!has_word(b, word)) return false;
    return true;
}

/* The action for a decision: always one of its legal strings (it has at least one). */
static const char *choose_action(const Decision *d) {
    Action choice = "";
    if (strcmp(d->kind, "exchange") == 0) choose_exchange(d, choice);
    else if (strcmp(d->kind, "bid") == 0) choose_bid(d, choice);
    else if (strcmp(d->kind, "play") == 0) choose_play(d, choice);
    for (int i = 0; i < d->legal_count; i++)
        if (same_words(choice, d->legal[i])) return d->legal[i];
    return d->legal[0];
}

/* ---- Reading messages (msgpack_object) ------------------------------------------------ */

/* The value of `key` in a map, or NULL if it is absent or `map` is not a map. */
static const msgpack_object *get(const msgpack_object *map, const char *key) {
    if (!map || map->type != MSGPACK_OBJECT_MAP) return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && !memcmp(k->via.str.ptr, key, n))
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static bool str_is(const msgpack_object *o, const char *text) {
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(text) &&
           !memcmp(o->via.str.ptr, text, o->via.str.size);
}

/* An integer value, or `fallback` if `o` is absent or not an integer. */
static int64_t int_or(const msgpack_object *o, int64_t fallback) {
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (int64_t)o->via.u64;
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return o->via.i64;
    return fallback;
}

/* Copies a string into buf[size] with its NUL; false if `o` is not a string that fits. */
static bool copy_str(const msgpack_object *o, char *buf, size_t size) {
    if (!o || o->type != MSGPACK_OBJECT_STR || o->via.str.size >= size) return false;
    memcpy(buf, o->via.str.ptr, o->via.str.size);
    buf[o->via.str.size] = '\0';
    return true;
}

/* Copies an array of at most `max` strings into consecutive buffers `stride` bytes apart;
 * returns how many, or -1 if `o` is not such an array. */
static int copy_strs(const msgpack_object *o, char *first, size_t stride, int max) {
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > (uint32_t)max) return -1;
    for (uint32_t i = 0; i < o->via.array.size; i++)
        if (!copy_str(&o->via.array.ptr[i], first + i * stride, stride)) return -1;
    return (int)o->via.array.size;
}

/* Fills `d` from a `decide` message; false if a field the strategy needs is missing. */
static bool read_decision(const msgpack_object *msg, Decision *d) {
    const msgpack_object *obs = get(msg, "observation");
    memset(d, 0, sizeof *d);
    d->master = str_is(get(obs, "role"), "master");
    d->master_exchange_count = (int)int_or(get(obs, "master_exchange_count"), 0);
    copy_str(get(obs, "lead"), d->lead, sizeof d->lead); /* nil when we lead: stays "" */
    d->hand_size = copy_strs(get(obs, "hand"), d->hand[0], sizeof(Card), MAX_HAND);
    d->legal_count = copy_strs(get(msg, "legal"), d->legal[0], sizeof(Action), MAX_LEGAL);
    return copy_str(get(msg, "decision"), d->kind, sizeof d->kind) &&
           copy_str(get(obs, "key_card"), d->key_card, sizeof d->key_card) &&
           d->hand_size >= 0 && d->legal_count > 0;
}

/* ---- Writing messages (msgpack_packer) ------------------------------------------------ */

/* Every protocol version this bot speaks (SPEC section 3): 1.1 added match_start's seed, 1.2
 * its time control's clock (which this bot, answering at once, has no use for). */
static const char *const PROTOCOL_VERSIONS[] = {"1.2", "1.1", "1.0"};
#define VERSION_COUNT 3

typedef struct {
    int64_t next_id;  /* our message ids: unique and increasing on the connection */
    char protocol[8]; /* the version welcome named ("" before it: our newest) */
    uint64_t random;  /* the match's random numbers, seeded by its match_start */
    bool seeded;      /* match_start had a seed (protocol 1.1) */
} Session;

static void pack_str(msgpack_packer *pk, const char *text) {
    size_t n = strlen(text);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, text, n);
}

static void pack_field(msgpack_packer *pk, const char *key, const char *text) {
    pack_str(pk, key);
    pack_str(pk, text);
}

/* Starts a message: a map of the envelope (version, type, id) and `more` fields to come. */
static void begin(msgpack_packer *pk, Session *s, const char *type, size_t more) {
    msgpack_pack_map(pk, 3 + more);
    pack_field(pk, "version", s->protocol[0] ? s->protocol : PROTOCOL_VERSIONS[0]);
    pack_field(pk, "type", type);
    pack_str(pk, "id");
    msgpack_pack_int64(pk, s->next_id++);
}

static void pack_reply_to(msgpack_packer *pk, int64_t id) {
    pack_str(pk, "reply_to");
    if (id == NO_ID) msgpack_pack_nil(pk);
    else msgpack_pack_int64(pk, id);
}

static void pack_hello(msgpack_packer *pk, Session *s, const char *token) {
    begin(pk, s, "hello", 5);
    pack_str(pk, "versions"); /* every protocol version this bot speaks */
    msgpack_pack_array(pk, VERSION_COUNT);
    for (int i = 0; i < VERSION_COUNT; i++) pack_str(pk, PROTOCOL_VERSIONS[i]);
    pack_field(pk, "name", BOT_NAME);
    pack_field(pk, "author", "aegis-ref sample bots");
    pack_field(pk, "bot_version", "1.0");
    pack_field(pk, "token", token);
}

static void pack_error(msgpack_packer *pk, Session *s, int64_t id, const char *code,
                       const char *message) {
    begin(pk, s, "error", 3);
    pack_reply_to(pk, id);
    pack_field(pk, "code", code);
    pack_field(pk, "message", message);
}

/* Logs to stderr (the referee keeps its last lines in the record; stdout is not used). */
static void note(const char *what, const msgpack_object *value) {
    fprintf(stderr, "[" BOT_NAME "] %s", what);
    if (value) msgpack_object_print(stderr, *value);
    fputc('\n', stderr);
}

/* Answers one message from the referee (NULL: it was not one msgpack value): packs the
 * reply, if any, and returns the exit code when it is time to exit, else CARRY_ON.
 * Unknown fields are ignored. */
static int handle(Session *s, const msgpack_object *msg, msgpack_packer *pk) {
    const msgpack_object *type = get(msg, "type");
    int64_t id = int_or(get(msg, "id"), NO_ID);
    Decision d;
    if (!type || type->type != MSGPACK_OBJECT_STR) {
        pack_error(pk, s, id, "malformed", "a message must be a msgpack map with a type");
    } else if (str_is(type, "welcome")) {
        note("welcome: protocol ", get(msg, "protocol"));
        const msgpack_object *chosen = get(msg, "protocol");
        for (int i = 0; chosen && i < VERSION_COUNT; i++)
            if (str_is(chosen, PROTOCOL_VERSIONS[i])) strcpy(s->protocol, PROTOCOL_VERSIONS[i]);
    } else if (str_is(type, "reject")) { /* our hello was refused: nothing more to do */
        note("rejected: ", get(msg, "reason"));
        return 1;
    } else if (str_is(type, "match_start")) {
        note("match ", get(msg, "match_id"));
        /* Reseed at every match: its choices then depend on the match alone. */
        int64_t seed = int_or(get(msg, "seed"), -1);
        s->seeded = seed >= 0;
        s->random = s->seeded ? (uint64_t)seed : 0;
        begin(pk, s, "ready", 1);
        pack_reply_to(pk, id);
    } else if (str_is(type, "decide")) {
        if (!read_decision(msg, &d)) {
            pack_error(pk, s, id, "malformed", "cannot read this decide");
        } else {
            d.random = s->seeded ? &s->random : NULL;
            begin(pk, s, "act", 2);
            pack_reply_to(pk, id);
            pack_field(pk, "action", choose_action(&d));
        }
    } else if (str_is(type, "ping")) {
        begin(pk, s, "pong", 1);
        pack_reply_to(pk, id);
    } else if (str_is(type, "match_end")) {
        note("match over: ", get(msg, "result"));
    } else if (str_is(type, "error")) { /* the referee found fault with a message of ours */
        note("referee error: ", get(msg, "message"));
    } else if (str_is(type, "shutdown")) {
        note("shutdown: ", get(msg, "reason"));
        return 0;
    } else { /* answer an unknown type with an error, then carry on */
        pack_error(pk, s, id, "unknown_type", "unknown message type");
    }
    return CARRY_ON;
}

/* ---- Transport (SPEC section 1) ------------------------------------------------------- */

/* Where to connect and how: --endpoint / --token override AEGIS_ENDPOINT / AEGIS_TOKEN; a
 * remote bot's CurveZMQ keys (SPEC section 9, Z85 text) come from --server-key /
 * --public-key / --secret-key or AEGIS_SERVER_KEY / AEGIS_PUBLIC_KEY / AEGIS_SECRET_KEY.
 * Other arguments are ignored; "--flag=value" is read too. */
typedef struct {
    const char *endpoint, *token, *server_key, *public_key, *secret_key;
} Settings;

static void read_settings(int argc, char **argv, Settings *settings) {
    static const char *const flags[] = {"--endpoint", "--token", "--server-key", "--public-key",
                                        "--secret-key"};
    static const char *const variables[] = {"AEGIS_ENDPOINT", "AEGIS_TOKEN", "AEGIS_SERVER_KEY",
                                            "AEGIS_PUBLIC_KEY", "AEGIS_SECRET_KEY"};
    const char **fields[] = {&settings->endpoint, &settings->token, &settings->server_key,
                             &settings->public_key, &settings->secret_key};
    for (int f = 0; f < 5; f++) *fields[f] = getenv(variables[f]);
    for (int i = 1; i < argc; i++) {
        for (int f = 0; f < 5; f++) {
            size_t length = strlen(flags[f]);
            if (strncmp(argv[i], flags[f], length) != 0) continue;
            if (argv[i][length] == '=') *fields[f] = argv[i] + length + 1;
            else if (argv[i][length] == '\0' && i + 1 < argc) *fields[f] = argv[++i];
        }
    }
}

#ifndef BOT_NO_MAIN
#define RECONNECT (-2) /* converse() returns this when a remote bot's connection dropped */

/* A DEALER connected to the referee; a remote bot's encrypted with CurveZMQ, with ZMTP
 * heartbeats (a referee whose machine went silent counts as a dropped connection), and
 * watched by a monitor that reports a dropped connection. NULL if it cannot connect. */
static void *open_socket(void *context, const Settings *settings, void **monitor) {
    void *socket = zmq_socket(context, ZMQ_DEALER);
    int linger = 0; /* exit at once, even with unsent messages */
    zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
    *monitor = NULL;
    if (settings->server_key) {
        int one = 1, interval = 1000, timeout = 5000;
        zmq_setsockopt(socket, ZMQ_IPV6, &one, sizeof one);
        zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, settings->server_key, 40);
        zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, settings->public_key, 40);
        zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, settings->secret_key, 40);
        zmq_setsockopt(socket, ZMQ_HEARTBEAT_IVL, &interval, sizeof interval);
        zmq_setsockopt(socket, ZMQ_HEARTBEAT_TIMEOUT, &timeout, sizeof timeout);
        char address[64];
        snprintf(address, sizeof address, "inproc://monitor-%p", socket);
        if (zmq_socket_monitor(socket, address, ZMQ_EVENT_DISCONNECTED) == 0) {
            *monitor = zmq_socket(context, ZMQ_PAIR);
            zmq_setsockopt(*monitor, ZMQ_LINGER, &linger, sizeof linger);
            zmq_connect(*monitor, address);
        }
    }
    if (zmq_connect(socket, settings->endpoint) != 0) {
        fprintf(stderr, "[" BOT_NAME "] cannot connect to %s: %s\n", settings->endpoint,
                zmq_strerror(errno));
        if (*monitor) zmq_close(*monitor);
        zmq_close(socket);
        return NULL;
    }
    return socket;
}

/* One connection: hello, then an answer to every request. Returns the exit code, or
 * RECONNECT when a remote bot's connection dropped (it then dials in again, with a new
 * hello). */
static int converse(void *context, const Settings *settings) {
    void *monitor;
    void *socket = open_socket(context, settings, &monitor);
    if (!socket) return 2;
    Session session = {.next_id = 1};
    msgpack_sbuffer out; /* the message to send next */
    msgpack_sbuffer_init(&out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);
    msgpack_unpacked msg;
    msgpack_unpacked_init(&msg);
    pack_hello(&pk, &session, settings->token ? settings->token : "");

    int code = CARRY_ON;
    while (code == CARRY_ON) {
        if (out.size > 0 && zmq_send(socket, out.data, out.size, 0) < 0) break; /* one frame */
        msgpack_sbuffer_clear(&out);
        zmq_pollitem_t items[] = {{socket, 0, ZMQ_POLLIN, 0}, {monitor, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, monitor ? 2 : 1, -1) < 0) break;
        if (monitor && (items[1].revents & ZMQ_POLLIN)) {
            code = RECONNECT; /* the only event asked for: the connection dropped */
            break;
        }
        zmq_msg_t frame;
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, socket, 0) < 0) break;
        /* A message is exactly one frame holding exactly one msgpack value. */
        const char *data = zmq_msg_data(&frame);
        size_t size = zmq_msg_size(&frame), used = 0;
        bool one = !zmq_msg_more(&frame) &&
                   msgpack_unpack_next(&msg, data, size, &used) == MSGPACK_UNPACK_SUCCESS &&
                   used == size;
        code = handle(&session, one ? &msg.data : NULL, &pk); /* strings point into `frame` */
        while (zmq_msg_more(&frame) && zmq_msg_recv(&frame, socket, 0) >= 0) {
        } /* drop the other frames of a message that had several */
        zmq_msg_close(&frame);
    }
    if (code == CARRY_ON) fprintf(stderr, "[" BOT_NAME "] %s\n", zmq_strerror(zmq_errno()));
    msgpack_unpacked_destroy(&msg);
    msgpack_sbuffer_destroy(&out);
    if (monitor) {
        zmq_socket_monitor(socket, NULL, 0);
        zmq_close(monitor);
    }
    zmq_close(socket);
    return code == CARRY_ON ? 1 : code;
}

int main(int argc, char **argv) {
    Settings settings;
    read_settings(argc, argv, &settings);
    if (!settings.endpoint) {
        fprintf(stderr, "[" BOT_NAME "] no endpoint: set AEGIS_ENDPOINT or pass --endpoint URL\n");
        return 2;
    }
    if (settings.server_key) {
        bool keys = settings.public_key && settings.secret_key && strlen(settings.server_key) == 40 &&
                    strlen(settings.public_key) == 40 && strlen(settings.secret_key) == 40;
        if (!keys) {
            fprintf(stderr, "[" BOT_NAME "] a remote bot needs the server key and its own public "
                            "and secret keys, 40 Z85 characters each\n");
            return 2;
        }
        if (!zmq_has("curve")) {
            fprintf(stderr, "[" BOT_NAME "] this libzmq was built without CurveZMQ\n");
            return 2;
        }
    }
    void *context = zmq_ctx_new();
    int code;
    while ((code = converse(context, &settings)) == RECONNECT) {
        fprintf(stderr, "[" BOT_NAME "] lost the connection to the referee; dialling in again\n");
        zmq_sleep(1); /* not in a tight loop, if the referee refuses the connection */
    }
    zmq_ctx_term(context);
    return code;
}
#endif
