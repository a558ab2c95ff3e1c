/* Tests of the C sample bot: the msgpack codec against the protocol's golden vectors, the
 * reply to every referee-to-bot vector, and the strategy. `make check` runs it:
 *     ./test_bot ../../protocol/vectors
 * It includes bot.c (compiled with -DBOT_NO_MAIN) to reach its static functions. */
#include "bot.c"

#include <dirent.h>

static int failures = 0, checks = 0;

#define CHECK(condition, ...)                                                                 \
    do {                                                                                      \
        checks++;                                                                             \
        if (!(condition)) {                                                                   \
            failures++;                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                              \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
        }                                                                                     \
    } while (0)

static const char *vectors; /* the folder of the vectors */

/* A vector file's bytes, in a buffer the caller frees; NULL if it cannot be read. */
static char *read_file(const char *name, size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", vectors, name);
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    char *data = malloc(1 << 17);
    *size = fread(data, 1, 1 << 17, file);
    fclose(file);
    return data;
}

/* A vector, decoded: exactly one msgpack value filling the file. */
typedef struct {
    char *bytes;
    size_t size;
    msgpack_unpacked value;
} Vector;

static bool load(const char *name, Vector *v) {
    char file[256];
    snprintf(file, sizeof file, "%s.msgpack", name);
    size_t used = 0;
    msgpack_unpacked_init(&v->value);
    v->bytes = read_file(file, &v->size);
    return v->bytes &&
           msgpack_unpack_next(&v->value, v->bytes, v->size, &used) == MSGPACK_UNPACK_SUCCESS &&
           used == v->size && v->value.data.type == MSGPACK_OBJECT_MAP;
}

static void unload(Vector *v) {
    msgpack_unpacked_destroy(&v->value);
    free(v->bytes);
}

/* Every vector decodes to one map with version "1.1" and a type, and encodes back to the
 * same bytes (msgpack's shortest forms; the vectors' keys are sorted, and packing the decoded
 * map keeps their order). */
static void test_codec(void) {
    DIR *dir = opendir(vectors);
    CHECK(dir != NULL, "cannot open %s", vectors);
    if (!dir) return;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        char name[256];
        size_t n = strlen(entry->d_name);
        if (n < 9 || n > 200 || strcmp(entry->d_name + n - 8, ".msgpack") != 0) continue;
        snprintf(name, sizeof name, "%.*s", (int)(n - 8), entry->d_name);
        Vector v;
        bool ok = load(name, &v);
        CHECK(ok, "%s does not decode to one map", entry->d_name);
        if (ok) {
            /* The vectors are of protocol 1.2, the newest this bot speaks. */
            CHECK(str_is(get(&v.value.data, "version"), "1.2"), "%s: version", name);
            CHECK(get(&v.value.data, "type") != NULL, "%s: type", name);
            msgpack_sbuffer out;
            msgpack_sbuffer_init(&out);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);
            msgpack_pack_object(&pk, v.value.data);
            CHECK(out.size == v.size && !memcmp(out.data, v.bytes, v.size), "%s: re-encoding", name);
            msgpack_sbuffer_destroy(&out);
        }
        unload(&v);
        count++;
    }
    closedir(dir);
    CHECK(count >= 17, "only %d vectors in %s", count, vectors);
}

/* Our message (packed into `out`) has every field of the vector `name` with an equal value,
 * apart from those named in `except` (space-separated), and no other field. */
static void check_like(const msgpack_sbuffer *out, const char *name, const char *except) {
    Vector v;
    msgpack_unpacked ours;
    msgpack_unpacked_init(&ours);
    size_t used = 0;
    bool ok = load(name, &v) &&
              msgpack_unpack_next(&ours, out->data, out->size, &used) == MSGPACK_UNPACK_SUCCESS;
    CHECK(ok, "%s: cannot decode the vector or our message", name);
    if (ok) {
        const msgpack_object_map *map = &v.value.data.via.map;
        CHECK(ours.data.type == MSGPACK_OBJECT_MAP && ours.data.via.map.size == map->size,
              "%s: not the same fields", name);
        for (uint32_t i = 0; i < map->size; i++) {
            char key[64];
            copy_str(&map->ptr[i].key, key, sizeof key);
            if (has_word(except, key)) continue;
            const msgpack_object *mine = get(&ours.data, key);
            CHECK(mine && msgpack_object_equal(*mine, map->ptr[i].val), "%s: field %s", name, key);
        }
    }
    msgpack_unpacked_destroy(&ours);
    unload(&v);
}

/* Feeds the vector `name` to a fresh session whose next id is `next_id`; returns what
 * handle() returned and leaves the reply in `out`. */
static int answer(const char *name, int64_t next_id, msgpack_sbuffer *out) {
    Session session = {.next_id = next_id};
    Vector v;
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
    msgpack_sbuffer_clear(out);
    int code = load(name, &v) ? handle(&session, &v.value.data, &pk) : -99;
    unload(&v);
    return code;
}

static void test_conversation(void) {
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);

    Session session = {.next_id = 1}; /* hello: the vector's token, our own name and author */
    pack_hello(&pk, &session, "7f3c9a1e5b2d4068");
    check_like(&out, "hello", "name author bot_version versions"); /* ours differ */
    msgpack_unpacked hello;
    msgpack_unpacked_init(&hello);
    msgpack_unpack_next(&hello, out.data, out.size, NULL);
    const msgpack_object *versions = get(&hello.data, "versions");
    CHECK(versions && versions->type == MSGPACK_OBJECT_ARRAY && versions->via.array.size == 3 &&
              str_is(&versions->via.array.ptr[0], "1.2") &&
              str_is(&versions->via.array.ptr[1], "1.1") &&
              str_is(&versions->via.array.ptr[2], "1.0"),
          "hello offers 1.2, 1.1 and 1.0");
    msgpack_unpacked_destroy(&hello);
    msgpack_sbuffer_clear(&out);

    CHECK(answer("match_start", 2, &out) == CARRY_ON, "match_start");
    check_like(&out, "ready", "");
    CHECK(answer("ping", 107, &out) == CARRY_ON, "ping");
    check_like(&out, "pong", "");
    const char *decides[] = {"decide_exchange", "decide_bid", "decide_play"};
    const char *acts[] = {"act_exchange", "act_bid", "act_play"};
    for (int i = 0; i < 3; i++) { /* ids and reply_to as in the vector; a legal action */
        Vector request;
        int64_t id = load(decides[i], &request) ? int_or(get(&request.value.data, "id"), 0) : 0;
        CHECK(answer(decides[i], id, &out) == CARRY_ON, "%s", decides[i]);
        check_like(&out, acts[i], "action");
        msgpack_unpacked reply;
        msgpack_unpacked_init(&reply);
        msgpack_unpack_next(&reply, out.data, out.size, NULL);
        const msgpack_object *action = get(&reply.data, "action"), *legal;
        legal = get(&request.value.data, "legal");
        bool found = false;
        for (uint32_t j = 0; action && legal && j < legal->via.array.size; j++)
            found = found || msgpack_object_equal(*action, legal->via.array.ptr[j]);
        CHECK(found, "%s: the action is not legal", decides[i]);
        msgpack_unpacked_destroy(&reply);
        unload(&request);
    }
    const char *silent[] = {"welcome", "match_end", "match_end_forfeit", "error"};
    for (int i = 0; i < 4; i++)
        CHECK(answer(silent[i], 1, &out) == CARRY_ON && out.size == 0, "%s: no answer", silent[i]);
    CHECK(answer("shutdown", 1, &out) == 0 && out.size == 0, "shutdown exits 0");
    CHECK(answer("reject", 1, &out) == 1, "reject exits 1");

    /* An unknown type, with an unknown field: error unknown_type naming its id. */
    msgpack_sbuffer in;
    msgpack_sbuffer_init(&in);
    msgpack_packer in_pk;
    msgpack_packer_init(&in_pk, &in, msgpack_sbuffer_write);
    Session referee = {.next_id = 9};
    begin(&in_pk, &referee, "gossip", 1);
    pack_field(&in_pk, "weather", "sunny");
    msgpack_unpacked gossip, reply;
    msgpack_unpacked_init(&gossip);
    msgpack_unpacked_init(&reply);
    msgpack_unpack_next(&gossip, in.data, in.size, NULL);
    msgpack_sbuffer_clear(&out);
    session.next_id = 1;
    CHECK(handle(&session, &gossip.data, &pk) == CARRY_ON, "carry on after an unknown type");
    msgpack_unpack_next(&reply, out.data, out.size, NULL);
    CHECK(str_is(get(&reply.data, "code"), "unknown_type"), "unknown_type");
    CHECK(int_or(get(&reply.data, "reply_to"), -5) == 9, "unknown_type names the id");
    msgpack_sbuffer_clear(&out); /* not a msgpack value: error malformed, reply_to nil */
    CHECK(handle(&session, NULL, &pk) == CARRY_ON, "carry on after a malformed message");
    msgpack_unpack_next(&reply, out.data, out.size, NULL);
    CHECK(str_is(get(&reply.data, "code"), "malformed"), "malformed");
    CHECK(get(&reply.data, "reply_to")->type == MSGPACK_OBJECT_NIL, "malformed: reply_to nil");
    msgpack_unpacked_destroy(&gossip);
    msgpack_unpacked_destroy(&reply);
    msgpack_sbuffer_destroy(&in);
    msgpack_sbuffer_destroy(&out);
}

/* A decision with trump H (key card 7H, killers 7S 7D 7C); hand and legal space-separated
 * and comma-separated. */
static Decision decision(const char *kind, bool master, int count, const char *lead,
                         const char *hand, const char *legal) {
    Decision d = {.master = master, .master_exchange_count = count};
    char copy[1024];
    snprintf(d.kind, sizeof d.kind, "%s", kind);
    snprintf(d.key_card, sizeof d.key_card, "7H");
    snprintf(d.lead, sizeof d.lead, "%s", lead);
    snprintf(copy, sizeof copy, "%s", hand);
    for (char *card = strtok(copy, " "); card; card = strtok(NULL, " "))
        snprintf(d.hand[d.hand_size++], sizeof(Card), "%s", card);
    snprintf(copy, sizeof copy, "%s", legal);
    for (char *action = strtok(copy, ","); action; action = strtok(NULL, ","))
        snprintf(d.legal[d.legal_count++], sizeof(Action), "%s", action);
    return d;
}

#define EXPECT(d, action)                                                                    \
    do {                                                                                     \
        Decision decision_ = (d);                                                            \
        const char *chosen_ = choose_action(&decision_);                                     \
        CHECK(strcmp(chosen_, action) == 0, "chose %s, expected %s", chosen_, action);       \
    } while (0)

static void test_strategy(void) {
    /* Cards: K > Q > J > 10 > ... > 2, the Ace beats only K, Q and J; tricks. */
    CHECK(beats_in_suit("KS", "QS") && beats_in_suit("10S", "9S") && beats_in_suit("JS", "10S"),
          "ranks");
    CHECK(beats_in_suit("AS", "KS") && !beats_in_suit("AS", "10S") && beats_in_suit("2S", "AS"),
          "the Ace");
    Decision d = decision("play", true, 0, "", "", "play 2S");
    CHECK(follower_wins(&d, "5S", "9S") && !follower_wins(&d, "5S", "2C"), "follow or discard");
    CHECK(follower_wins(&d, "KS", "2H") && follower_wins(&d, "KH", "7C"), "trump and killer");
    CHECK(!follower_wins(&d, "KS", "7C") && !follower_wins(&d, "KH", "8C"), "no killer");

    /* Exchange: the master keeps a good hand and exchanges a poor one once; the slave. */
    const char *master_legal = "stop,exchange 2S 3D 4C,exchange 2S 3D 4C 5C";
    EXPECT(decision("exchange", true, 0, "", "KH 2H KS 3D 4C", master_legal), "stop");
    EXPECT(decision("exchange", true, 0, "", "2S KH 3D 4C 5C", master_legal),
           "exchange 2S 3D 4C 5C");
    EXPECT(decision("exchange", true, 1, "", "2S KH 3D 4C 5C", master_legal), "stop");
    const char *slave_legal = "exchange,exchange 3D 2S";
    EXPECT(decision("exchange", false, 0, "", "2S KH QS 3D 7C", slave_legal), "exchange 3D 2S");
    EXPECT(decision("exchange", false, 0, "", "AH KH QS KD 7C", slave_legal), "exchange");

    /* Bids: one per trump and per king, within the legal range. */
    const char *bids = "bid 2,bid 3,bid 4,bid 5", *overbids = "pass,bid 3,bid 4,bid 5";
    EXPECT(decision("bid", true, 1, "", "KH 9H 5H KS 2D", bids), "bid 4");
    EXPECT(decision("bid", true, 1, "", "2S 3S 5D 6D 8C", bids), "bid 2");
    EXPECT(decision("bid", false, 0, "", "KH 9H 5H KS 2D", overbids), "bid 3");
    EXPECT(decision("bid", false, 0, "", "2S 3S 5D 6D 8C", overbids), "pass");

    /* Play: the cheapest winner, else the cheapest card; lead the highest trump. */
    const char *spades = "play QS,play 9S,play 4S";
    EXPECT(decision("play", true, 0, "8S", "QS 9S 4S 3H 7C", spades), "play 9S");
    EXPECT(decision("play", true, 0, "KS", "QS 9S 4S 3H 7C", spades), "play 4S");
    EXPECT(decision("play", true, 0, "KD", "KH 2H 3C", "play KH,play 2H,play 3C"), "play 2H");
    EXPECT(decision("play", true, 0, "KH", "7C 2D", "play 7C,play 2D"), "play 7C");
    EXPECT(decision("play", true, 0, "", "AH QH KS 5D", "play AH,play QH,play KS,play 5D"),
           "play QH");
    EXPECT(decision("play", true, 0, "", "AS JS 10D 5C", "play AS,play JS,play 10D,play 5C"),
           "play JS");
}

/* Ties between equally good cards go to the first without a seed, and are broken by the
 * match's random numbers with one: the same seed, the same choice. */
static void test_seeded_ties(void) {
    /* Leading without trumps (trump H): KS and KC are the strongest, worth the same. */
    const char *legal = "play KS,play KC,play 4D,play 2S,play 3D";
    EXPECT(decision("play", true, 0, "", "KS KC 4D 2S 3D", legal), "play KS");
    bool seen_ks = false, seen_kc = false;
    for (uint64_t seed = 0; seed < 40; seed++) {
        uint64_t state = seed, again = seed;
        Decision d = decision("play", true, 0, "", "KS KC 4D 2S 3D", legal);
        Decision e = d;
        d.random = &state;
        e.random = &again;
        const char *first = choose_action(&d), *second = choose_action(&e);
        CHECK(strcmp(first, second) == 0, "seed %llu: %s, then %s", (unsigned long long)seed,
              first, second);
        seen_ks = seen_ks || strcmp(first, "play KS") == 0;
        seen_kc = seen_kc || strcmp(first, "play KC") == 0;
    }
    CHECK(seen_ks && seen_kc, "ties always go the same way");

    /* match_start reseeds the session; welcome sets the envelope's version. */
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    Session session = {.next_id = 1};
    CHECK(answer("match_start", 2, &out) == CARRY_ON, "match_start");
    Vector start;
    if (load("match_start", &start)) {
        msgpack_packer pk;
        msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);
        handle(&session, &start.value.data, &pk);
        CHECK(session.seeded, "match_start's seed is taken");
        CHECK(session.random == (uint64_t)int_or(get(&start.value.data, "seed"), -1),
              "seeded from match_start's seed");
        unload(&start);
    }
    msgpack_sbuffer_destroy(&out);
}

/* Flags override the environment; a remote bot's keys come from either. */
static void test_settings(void) {
    setenv("AEGIS_ENDPOINT", "ipc:///tmp/a", 1);
    setenv("AEGIS_TOKEN", "env", 1);
    unsetenv("AEGIS_SERVER_KEY");
    setenv("AEGIS_PUBLIC_KEY", "public-from-the-environment", 1);
    unsetenv("AEGIS_SECRET_KEY");
    Settings settings;
    char *plain[] = {"bot", NULL};
    read_settings(1, plain, &settings);
    CHECK(strcmp(settings.endpoint, "ipc:///tmp/a") == 0 && strcmp(settings.token, "env") == 0,
          "endpoint and token from the environment");
    CHECK(settings.server_key == NULL, "no server key: a started bot");
    char *flagged[] = {"bot", "--endpoint", "tcp://h:1", "--token=arg", "--server-key",
                       "S", "--secret-key=X", "--fast", NULL};
    read_settings(8, flagged, &settings);
    CHECK(strcmp(settings.endpoint, "tcp://h:1") == 0, "--endpoint");
    CHECK(strcmp(settings.token, "arg") == 0, "--token=");
    CHECK(settings.server_key && strcmp(settings.server_key, "S") == 0, "--server-key");
    CHECK(strcmp(settings.public_key, "public-from-the-environment") == 0, "AEGIS_PUBLIC_KEY");
    CHECK(settings.secret_key && strcmp(settings.secret_key, "X") == 0, "--secret-key=");
    char *dangling[] = {"bot", "--token", NULL};
    read_settings(2, dangling, &settings);
    CHECK(strcmp(settings.token, "env") == 0, "a flag without its value is ignored");
}

int main(int argc, char **argv) {
    vectors = argc > 1 ? argv[1] : "../../protocol/vectors";
    test_settings();
    test_codec();
    test_conversation();
    test_strategy();
    test_seeded_ties();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
