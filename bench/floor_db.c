/* The database floor of siwa's writing routes: the statements siwa sends MariaDB for one request,
 * exactly (their text, prepared once per connection and executed with binds of the same types, the
 * compound blocks included), on connections set up as siwa's (the same session settings, a
 * transaction connection without autocommit and one with it for id blocks), CONNECTIONS threads in a
 * tight loop for SECONDS, with nothing else: no HTTP, no TLS, no FastCGI, no JSON, no hashing, no
 * signature. What a request costs the database, done as fast as this client can ask for it.
 *
 *   floor_db MODE SOCKET DATABASE USER PASSWORD_FILE CONNECTIONS SECONDS [BATCH]
 *
 * MODE
 *   sign-in  a new user's sign-in without a code: the identity lookup (SELECT), then one compound
 *            statement with the user, the Apple identity, the email, the nonce's claim, the session,
 *            its refresh token, the audit event and the COMMIT; ids from blocks of 1,000 reserved
 *            with siwa's statement on the autocommit connection.
 *   refresh  a rotation: the token's row and its session locked (SELECT ... FOR UPDATE), then one
 *            compound statement that spends it, extends the session, stores the next token and
 *            commits. 200 sessions in all (as scripts/bench auth), made first by sign-ins.
 *   sync     a sync of one user whose 4 lessons and 1 achievement changed, as siwa's sync
 *            committer writes it: the users' versions moved on (UPDATE), their sessions checked
 *            (SELECT ... LOCK IN SHARE MODE), the 5 records upserted (one array-bound INSERT), COMMIT.
 *            1,000 users with 20 lessons and 5 achievements each (as scripts/bench sync), made first.
 *            BATCH users per transaction (1 by default; siwa's committer puts the syncs that wait
 *            together in one, up to 64): BATCH must be 1, 2, 4, 8, 16, 32 or 64, the lengths siwa
 *            pads its IN lists to.
 *
 *   floor_db statements [BATCH]   prints the text of every statement this program prepares (for
 *                                 BATCH, default 1), each followed by a NUL byte, and connects nowhere
 *
 * Prints "<requests per second> <client CPU us per request> <server CPU us per request>" on
 * standard output (a sync counts BATCH requests per transaction; the server's CPU, user and system,
 * of the process whose id MARIADB_PID names, over the timed loop only; 0 without it), what it did
 * on standard error. Any error of the database ends it
 * with status 1. Build: cc -O2 -o floor_db floor_db.c -lmariadb -lpthread */
#include <mysql.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The session settings of siwa's connections (Sources/MariaDB/Connection.swift, initCommand). */
#define INIT_COMMAND                                                                                                            \
    "SET SESSION time_zone = '+00:00', sql_mode = "                                                                             \
    "'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"

/* The statements, as siwa sends them (captured from MariaDB's general log of a benchmark stack, and
 * in Sources/Accounts: SignIn/AppleAccounts.swift, Sessions/Sessions.swift, SignIn/Nonces.swift,
 * Admin/AuditLog.swift, Core/IDBlocks.swift, Sync/SyncStore.swift). */
static const char *RESERVE_USERS =
    "UPDATE id_blocks SET next_id = LAST_INSERT_ID(GREATEST(next_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM users)) + ?)\n"
    "WHERE table_name = ?";
static const char *RESERVE_SESSIONS =
    "UPDATE id_blocks SET next_id = LAST_INSERT_ID(GREATEST(next_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM sessions)) + ?)\n"
    "WHERE table_name = ?";
static const char *IDENTITY_LOOKUP = "SELECT id, user_id FROM apple_identities WHERE team_id = ? AND sub = ?";
static const char *SIGN_IN_BLOCK =
    "BEGIN NOT ATOMIC INSERT INTO users (id, first_name, last_name, external_id, created_at) VALUES (?, ?, ?, ?, FROM_UNIXTIME(? / 1000)); "
    "INSERT INTO apple_identities (user_id, team_id, sub, audience, transfer_sub, real_user_status)\n"
    "VALUES (?, ?, ?, ?, ?, ?); "
    "INSERT INTO user_emails (user_id, address, is_private_relay, verified) VALUES (?, ?, ?, ?)\n"
    "ON DUPLICATE KEY UPDATE verified = VALUES(verified), is_private_relay = VALUES(is_private_relay), updated_at = UTC_TIMESTAMP(3); "
    "INSERT IGNORE INTO used_nonces (nonce_hash, expires_at) VALUES (?, TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ? SECOND);\n"
    "IF ROW_COUNT() = 0 THEN SIGNAL SQLSTATE '45N01' SET MESSAGE_TEXT = 'nonce already used'; END IF; "
    "INSERT INTO sessions (id, user_id, apple_client_id, device, cookie_hash, expires_at) VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND); "
    "INSERT INTO refresh_tokens (token_hash, session_id) VALUES (?, ?); "
    "INSERT INTO audit_events (event_type, user_id, session_id, remote_address, detail) VALUES (?, ?, ?, ?, ?); COMMIT; END";
static const char *REFRESH_LOOKUP =
    "SELECT t.session_id, s.user_id, t.spent_at IS NOT NULL AS spent, s.revoked_at IS NULL AND s.expires_at > UTC_TIMESTAMP(3) AS active,\n"
    "    s.previous_token_hash <=> t.token_hash AND s.rotated_at > UTC_TIMESTAMP(3) - INTERVAL ? SECOND AS retried\n"
    "FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id\n"
    "WHERE t.token_hash = ? FOR UPDATE";
static const char *REFRESH_BLOCK =
    "BEGIN NOT ATOMIC UPDATE refresh_tokens t JOIN sessions s ON s.id = t.session_id\n"
    "SET t.spent_at = UTC_TIMESTAMP(3), s.last_used_at = UTC_TIMESTAMP(3),\n"
    "    s.expires_at = LEAST(UTC_TIMESTAMP(3) + INTERVAL ? SECOND, s.created_at + INTERVAL ? SECOND),\n"
    "    s.previous_token_hash = t.token_hash, s.rotated_at = UTC_TIMESTAMP(3)\n"
    "WHERE t.token_hash = ?; INSERT INTO refresh_tokens (token_hash, session_id) VALUES (?, ?); COMMIT; END";
static const char *SYNC_RECORDS =
    "INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version)\n"
    "VALUES (?, ?, ?, ?, ?, IF(? = 1, UTC_TIMESTAMP(3), NULL), ?)\n"
    "ON DUPLICATE KEY UPDATE body = VALUES(body), deleted_at = IF(VALUES(deleted) = 1, IFNULL(deleted_at, UTC_TIMESTAMP(3)), NULL),\n"
    "    deleted = VALUES(deleted), version = VALUES(version), updated_at = UTC_TIMESTAMP(3)";

/* siwa's settings of the benchmark: a session lives 90 days past its last use, with no maximum
 * lifetime (a century), and a rotated token may be presented again for 10 s. */
#define SESSION_LIFETIME 7776000LL
#define MAXIMUM_LIFETIME 3153600000LL
#define REUSE_INTERVAL 10LL
#define ID_BLOCK 1000ULL
#define REFRESH_SESSIONS 200
#define SYNC_USERS 1000
#define MAX_BATCH 64

static const char *mode, *socket_path, *database, *user;
static char password[256];
static int connections, batch = 1;
static double seconds;
static unsigned run_tag;

/* User and system CPU seconds of process `pid` so far; 0 when unknown. */
static double process_cpu(const char *pid) {
    if (!pid) return 0;
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    size_t n = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[n] = 0;
    /* Fields after the command's closing parenthesis: state is the 3rd, utime the 14th, stime the 15th. */
    char *p = strrchr(text, ')');
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return 0;
    return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char *what, const char *error) {
    fprintf(stderr, "floor_db %s: %s: %s\n", mode, what, error);
    exit(1);
}

static MYSQL *connect_db(int autocommit) {
    MYSQL *mysql = mysql_init(NULL);
    char command[512];
    snprintf(command, sizeof command, "%s%s", INIT_COMMAND, autocommit ? "" : ", autocommit = 0");
    mysql_options(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options(mysql, MYSQL_INIT_COMMAND, command);
    if (!mysql_real_connect(mysql, "localhost", user, password, database, 0, socket_path, 0)) fail("connect", mysql_error(mysql));
    return mysql;
}

static MYSQL_STMT *prepare(MYSQL *mysql, const char *sql) {
    MYSQL_STMT *statement = mysql_stmt_init(mysql);
    if (mysql_stmt_prepare(statement, sql, strlen(sql)) != 0) fail("prepare", mysql_stmt_error(statement));
    return statement;
}

/* Binds of one execution, of the types siwa binds: ids unsigned, other numbers signed (Bool as an
 * integer), text as strings, hashes as blobs. */
typedef struct {
    MYSQL_BIND bind[MAX_BATCH * 3 + 8];
    long long number[MAX_BATCH * 3 + 8];
    int count;
} Binds;

static void reset(Binds *b) {
    memset(b->bind, 0, sizeof b->bind);
    b->count = 0;
}
static void bind_id(Binds *b, unsigned long long value) {
    int i = b->count++;
    b->number[i] = (long long)value;
    b->bind[i].buffer_type = MYSQL_TYPE_LONGLONG;
    b->bind[i].buffer = &b->number[i];
    b->bind[i].is_unsigned = 1;
}
static void bind_int(Binds *b, long long value) {
    int i = b->count++;
    b->number[i] = value;
    b->bind[i].buffer_type = MYSQL_TYPE_LONGLONG;
    b->bind[i].buffer = &b->number[i];
}
static void bind_text(Binds *b, const char *text) {
    int i = b->count++;
    b->bind[i].buffer_type = MYSQL_TYPE_STRING;
    b->bind[i].buffer = (void *)text;
    b->bind[i].buffer_length = strlen(text);
}
static void bind_blob(Binds *b, const unsigned char *bytes, size_t length) {
    int i = b->count++;
    b->bind[i].buffer_type = MYSQL_TYPE_BLOB;
    b->bind[i].buffer = (void *)bytes;
    b->bind[i].buffer_length = length;
}
static void bind_null(Binds *b) { b->bind[b->count++].buffer_type = MYSQL_TYPE_NULL; }

/* Executes with the binds and reads every result to its end, as siwa does; the rows read. */
static unsigned long long execute(MYSQL_STMT *statement, Binds *b) {
    if (mysql_stmt_bind_param(statement, b->bind) != 0 || mysql_stmt_execute(statement) != 0) fail("execute", mysql_stmt_error(statement));
    unsigned long long rows = 0;
    for (;;) {
        if (mysql_stmt_field_count(statement) > 0) {
            if (mysql_stmt_store_result(statement) != 0) fail("result", mysql_stmt_error(statement));
            rows += mysql_stmt_num_rows(statement);
            mysql_stmt_free_result(statement);
        }
        int next = mysql_stmt_next_result(statement);
        if (next == -1) break;
        if (next != 0) fail("next result", mysql_stmt_error(statement));
    }
    return rows;
}

/* A thread's connections, statements and id blocks. */
typedef struct {
    int index;
    MYSQL *transactions, *autocommit;
    MYSQL_STMT *reserve_users, *reserve_sessions, *lookup, *sign_in, *refresh_lookup, *refresh, *records;
    MYSQL_STMT *advance[7], *sessions[7]; /* by log2 of the batch */
    unsigned long long users_next, users_end, sessions_next, sessions_end;
    uint64_t random;
    unsigned long long done;
    /* refresh: this thread's sessions and their live tokens; sync: its users, sessions, versions. */
    int owned;
    unsigned long long *session, *owner, *version;
    unsigned char (*token)[32];
} Worker;

static uint64_t next_random(Worker *w) {
    w->random ^= w->random << 13;
    w->random ^= w->random >> 7;
    w->random ^= w->random << 17;
    return w->random;
}
static void random_bytes(Worker *w, unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = next_random(w);
        memcpy(out + i, &r, n - i < 8 ? n - i : 8);
    }
}

static unsigned long long next_id(Worker *w, int users) {
    unsigned long long *next = users ? &w->users_next : &w->sessions_next, *end = users ? &w->users_end : &w->sessions_end;
    if (*next == *end) {
        Binds b;
        reset(&b);
        bind_id(&b, ID_BLOCK);
        bind_text(&b, users ? "users" : "sessions");
        MYSQL_STMT *statement = users ? w->reserve_users : w->reserve_sessions;
        execute(statement, &b);
        unsigned long long last = mysql_stmt_insert_id(statement);
        if (mysql_stmt_affected_rows(statement) != 1 || last <= ID_BLOCK) fail("id block", "no row in id_blocks (run siwa migrate)");
        *next = last - ID_BLOCK;
        *end = last;
    }
    return (*next)++;
}

static long long milliseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One new user's sign-in; its session id and refresh token hash. */
static void sign_in(Worker *w, unsigned long long *session_out, unsigned long long *user_out, unsigned char *token_out) {
    char sub[64], email[64];
    unsigned char nonce[32], token[32];
    unsigned long long n = w->done + w->owned;
    snprintf(sub, sizeof sub, "floor%08x.%04d.%020llu.%04llu", run_tag, w->index, n, n % 10000);
    snprintf(email, sizeof email, "floor%d.%llu@example.com", w->index, n);
    random_bytes(w, nonce, 32);
    random_bytes(w, token, 32);
    Binds b;
    reset(&b);
    bind_text(&b, "TEAMID0001");
    bind_text(&b, sub);
    if (execute(w->lookup, &b) != 0) fail("sign-in", "the identity exists");
    unsigned long long user_id = next_id(w, 1), session_id = next_id(w, 0);
    reset(&b);
    bind_id(&b, user_id), bind_null(&b), bind_null(&b), bind_null(&b), bind_int(&b, milliseconds());
    bind_id(&b, user_id), bind_text(&b, "TEAMID0001"), bind_text(&b, sub), bind_text(&b, "com.example.siwa"), bind_null(&b), bind_null(&b);
    bind_id(&b, user_id), bind_text(&b, email), bind_int(&b, 0), bind_int(&b, 1);
    bind_blob(&b, nonce, 32), bind_int(&b, milliseconds() / 1000 + 600);
    bind_id(&b, session_id), bind_id(&b, user_id), bind_text(&b, "com.example.siwa"), bind_text(&b, "bench"), bind_null(&b),
        bind_int(&b, SESSION_LIFETIME);
    bind_blob(&b, token, 32), bind_id(&b, session_id);
    bind_text(&b, "sign_in"), bind_id(&b, user_id), bind_id(&b, session_id), bind_text(&b, "127.0.0.1"),
        bind_text(&b, "{\"flow\":\"native\",\"newUser\":true}");
    execute(w->sign_in, &b);
    if (session_out) *session_out = session_id;
    if (user_out) *user_out = user_id;
    if (token_out) memcpy(token_out, token, 32);
}

/* One rotation of the refresh token of this thread's session `i`. */
static void refresh(Worker *w, int i) {
    unsigned char next[32];
    random_bytes(w, next, 32);
    Binds b;
    reset(&b);
    bind_int(&b, REUSE_INTERVAL);
    bind_blob(&b, w->token[i], 32);
    if (execute(w->refresh_lookup, &b) != 1) fail("refresh", "the token's row is missing");
    reset(&b);
    bind_int(&b, SESSION_LIFETIME), bind_int(&b, MAXIMUM_LIFETIME);
    bind_blob(&b, w->token[i], 32);
    bind_blob(&b, next, 32), bind_id(&b, w->session[i]);
    execute(w->refresh, &b);
    memcpy(w->token[i], next, 32);
}

static int log2_of(int n) {
    int l = 0;
    while ((1 << l) < n) l++;
    return l;
}

/* "?, ?, ..." and "(?, ?), (?, ?), ..." of `count`. */
static void marks(char *out, int count, const char *mark) {
    out[0] = 0;
    for (int i = 0; i < count; i++) {
        if (i) strcat(out, ", ");
        strcat(out, mark);
    }
}

/* The texts of a batch of `count` users' version update and session check. */
static void batch_texts(int count, char *advance, char *sessions, size_t size) {
    char ids[MAX_BATCH * 3 + 8], pairs[MAX_BATCH * 8 + 8];
    marks(ids, count, "?");
    marks(pairs, count, "(?, ?)");
    snprintf(advance, size, "UPDATE users SET sync_version = sync_version + 1\nWHERE id IN (%s) AND (id, sync_version) IN (%s)", ids, pairs);
    snprintf(sessions, size,
        "SELECT s.id, s.user_id FROM sessions s\nWHERE s.id IN (%s) AND s.revoked_at IS NULL AND s.expires_at > UTC_TIMESTAMP(3) LOCK IN SHARE MODE",
        ids);
}

static void prepare_batch(Worker *w, int count) {
    int l = log2_of(count);
    if (w->advance[l]) return;
    char advance[2048], sessions[2048];
    batch_texts(count, advance, sessions, sizeof advance);
    w->advance[l] = prepare(w->transactions, advance);
    w->sessions[l] = prepare(w->transactions, sessions);
}

/* The records of a sync: `changed` 0 for the first sync of a user (all 25 items, version 1), else
 * the 4 lessons and 1 achievement whose values rise with the version. One array-bound execution. */
static void write_records(Worker *w, const int *users, int count, int all) {
    enum { COLUMNS = 7 };
    int per_user = all ? 25 : 5, rows = count * per_user;
    static __thread unsigned long long user_ids[MAX_BATCH * 25], versions[MAX_BATCH * 25];
    static __thread long long deleted[MAX_BATCH * 25];
    static __thread char *collection[MAX_BATCH * 25], *key[MAX_BATCH * 25], *body[MAX_BATCH * 25];
    static __thread unsigned long collection_length[MAX_BATCH * 25], key_length[MAX_BATCH * 25], body_length[MAX_BATCH * 25];
    static __thread char keys[MAX_BATCH * 25][24], bodies[MAX_BATCH * 25][160];
    static __thread char indicators[COLUMNS][MAX_BATCH * 25];
    int r = 0;
    for (int u = 0; u < count; u++) {
        int i = users[u];
        unsigned long long version = w->version[i] + 1;
        int lessons = all ? 20 : 4, achievements = all ? 5 : 1;
        for (int k = 1; k <= lessons + achievements; k++, r++) {
            user_ids[r] = w->owner[i];
            versions[r] = version;
            deleted[r] = 0;
            if (k <= lessons) {
                collection[r] = "progress";
                snprintf(keys[r], sizeof keys[r], "benchl%d", k);
                snprintf(bodies[r], sizeof bodies[r],
                    "{\"beliefSystemId\":\"bench\",\"lessonId\":\"l%d\",\"status\":\"in_progress\",\"score\":%llu,\"earnedXp\":5,\"completedAt\":null}", k,
                    all ? 10 : 10 + version);
            } else {
                int a = k - lessons;
                collection[r] = "achievements";
                snprintf(keys[r], sizeof keys[r], "a%d", a);
                snprintf(bodies[r], sizeof bodies[r], "{\"achievementId\":\"a%d\",\"progress\":%llu,\"completed\":false,\"completedAt\":null}", a,
                    all ? 1 : 1 + version);
            }
            key[r] = keys[r];
            body[r] = bodies[r];
            collection_length[r] = strlen(collection[r]);
            key_length[r] = strlen(keys[r]);
            body_length[r] = strlen(bodies[r]);
        }
    }
    MYSQL_BIND bind[COLUMNS];
    memset(bind, 0, sizeof bind);
    memset(indicators, STMT_INDICATOR_NONE, sizeof indicators);
    void *buffers[COLUMNS] = { user_ids, collection, key, body, deleted, deleted, versions };
    unsigned long *lengths[COLUMNS] = { NULL, collection_length, key_length, body_length, NULL, NULL, NULL };
    enum enum_field_types types[COLUMNS] = { MYSQL_TYPE_LONGLONG, MYSQL_TYPE_STRING, MYSQL_TYPE_STRING, MYSQL_TYPE_BLOB,
        MYSQL_TYPE_LONGLONG, MYSQL_TYPE_LONGLONG, MYSQL_TYPE_LONGLONG };
    for (int c = 0; c < COLUMNS; c++) {
        bind[c].buffer_type = types[c];
        bind[c].buffer = buffers[c];
        bind[c].length = lengths[c];
        bind[c].u.indicator = indicators[c];
        bind[c].is_unsigned = (c == 0 || c == 6);
    }
    unsigned int size = rows;
    if (mysql_stmt_attr_set(w->records, STMT_ATTR_ARRAY_SIZE, &size) != 0 || mysql_stmt_bind_param(w->records, bind) != 0
        || mysql_stmt_execute(w->records) != 0)
        fail("records", mysql_stmt_error(w->records));
}

/* One transaction of `count` users' syncs (their indexes in this thread's users, ids ascending). */
static void sync_batch(Worker *w, const int *users, int count, int all) {
    prepare_batch(w, count);
    int l = log2_of(count);
    Binds b;
    reset(&b);
    for (int u = 0; u < count; u++) bind_id(&b, w->owner[users[u]]);
    for (int u = 0; u < count; u++) bind_id(&b, w->owner[users[u]]), bind_id(&b, w->version[users[u]]);
    execute(w->advance[l], &b);
    if (mysql_stmt_affected_rows(w->advance[l]) != (unsigned long long)count) fail("sync", "a user's version moved");
    reset(&b);
    for (int u = 0; u < count; u++) bind_id(&b, w->session[users[u]]);
    if (execute(w->sessions[l], &b) != (unsigned long long)count) fail("sync", "a session is not active");
    write_records(w, users, count, all);
    if (mysql_query(w->transactions, "COMMIT") != 0) fail("commit", mysql_error(w->transactions));
    for (int u = 0; u < count; u++) w->version[users[u]]++;
}

static void set_up(Worker *w) {
    w->transactions = connect_db(0);
    w->autocommit = connect_db(1);
    w->reserve_users = prepare(w->autocommit, RESERVE_USERS);
    w->reserve_sessions = prepare(w->autocommit, RESERVE_SESSIONS);
    w->lookup = prepare(w->transactions, IDENTITY_LOOKUP);
    w->sign_in = prepare(w->transactions, SIGN_IN_BLOCK);
    w->refresh_lookup = prepare(w->transactions, REFRESH_LOOKUP);
    w->refresh = prepare(w->transactions, REFRESH_BLOCK);
    w->records = prepare(w->transactions, SYNC_RECORDS);
    w->random = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)run_tag << 20) ^ (uint64_t)(w->index + 1) * 0x2545F4914F6CDD1DULL;
    int total = strcmp(mode, "refresh") == 0 ? REFRESH_SESSIONS : strcmp(mode, "sync") == 0 ? SYNC_USERS : 0;
    int threads = connections;
    w->owned = total / threads + (w->index < total % threads);
    if (total && w->owned == 0) fail("set-up", "more connections than sessions or users");
    w->session = calloc(w->owned + 1, sizeof *w->session);
    w->owner = calloc(w->owned + 1, sizeof *w->owner);
    w->version = calloc(w->owned + 1, sizeof *w->version);
    w->token = calloc(w->owned + 1, 32);
    int owned = w->owned;
    w->owned = 0;
    for (int i = 0; i < owned; i++, w->owned++) sign_in(w, &w->session[i], &w->owner[i], w->token[i]);
    if (strcmp(mode, "sync") == 0)
        for (int i = 0; i < owned; i++) sync_batch(w, &i, 1, 1);
}

/* Every thread set up (ready), then the deadline set and the loops started (go): the barrier orders
 * the write of the deadline before the threads read it. */
static pthread_barrier_t ready, go;
static double deadline;

static void *run(void *argument) {
    Worker *w = argument;
    set_up(w);
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);
    int turn = 0, users[MAX_BATCH];
    while (now() < deadline) {
        if (strcmp(mode, "sign-in") == 0) {
            sign_in(w, NULL, NULL, NULL);
            w->done++;
        } else if (strcmp(mode, "refresh") == 0) {
            refresh(w, turn);
            turn = (turn + 1) % w->owned;
            w->done++;
        } else {
            /* The next `batch` users in turn, in id order (as siwa's batches lock them). */
            int count = batch < w->owned ? batch : w->owned;
            for (int u = 0; u < count; u++) users[u] = (turn + u) % w->owned;
            for (int u = 1; u < count; u++)
                for (int v = u; v > 0 && w->owner[users[v]] < w->owner[users[v - 1]]; v--) {
                    int t = users[v];
                    users[v] = users[v - 1];
                    users[v - 1] = t;
                }
            if (count != batch) fail("sync", "fewer users in a thread than the batch");
            sync_batch(w, users, count, 0);
            turn = (turn + count) % w->owned;
            w->done += count;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "statements") == 0) {
        char advance[2048], sessions[2048];
        batch_texts(argc > 2 ? atoi(argv[2]) : 1, advance, sessions, sizeof advance);
        const char *texts[] = { RESERVE_USERS, RESERVE_SESSIONS, IDENTITY_LOOKUP, SIGN_IN_BLOCK, REFRESH_LOOKUP, REFRESH_BLOCK, SYNC_RECORDS,
            advance, sessions };
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) fwrite(texts[i], 1, strlen(texts[i]) + 1, stdout);
        return 0;
    }
    if (argc < 8) {
        fprintf(stderr, "usage: floor_db sign-in|refresh|sync SOCKET DATABASE USER PASSWORD_FILE CONNECTIONS SECONDS [BATCH]\n");
        return 2;
    }
    mode = argv[1], socket_path = argv[2], database = argv[3], user = argv[4];
    connections = atoi(argv[6]);
    seconds = atof(argv[7]);
    if (argc > 8) batch = atoi(argv[8]);
    if (strcmp(mode, "sign-in") && strcmp(mode, "refresh") && strcmp(mode, "sync")) fail("usage", "unknown mode");
    if (batch < 1 || batch > MAX_BATCH || (batch & (batch - 1))) fail("usage", "BATCH is 1, 2, 4, ... 64");
    FILE *file = fopen(argv[5], "r");
    if (!file || !fgets(password, sizeof password, file)) fail("password", argv[5]);
    fclose(file);
    password[strcspn(password, "\n")] = 0;
    run_tag = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    mysql_library_init(0, NULL, NULL);
    Worker *workers = calloc(connections, sizeof *workers);
    pthread_t *threads = calloc(connections, sizeof *threads);
    pthread_barrier_init(&ready, NULL, connections + 1);
    pthread_barrier_init(&go, NULL, connections + 1);
    for (int i = 0; i < connections; i++) {
        workers[i].index = i;
        pthread_create(&threads[i], NULL, run, &workers[i]);
    }
    /* Every thread set up (connections, statements, its sessions or users); then the timed loop. */
    struct rusage before, after;
    const char *server = getenv("MARIADB_PID");
    pthread_barrier_wait(&ready);
    getrusage(RUSAGE_SELF, &before);
    double server_before = process_cpu(server);
    double start = now();
    deadline = start + seconds;
    pthread_barrier_wait(&go);
    unsigned long long done = 0;
    for (int i = 0; i < connections; i++) {
        pthread_join(threads[i], NULL);
        done += workers[i].done;
    }
    double elapsed = now() - start;
    getrusage(RUSAGE_SELF, &after);
    double server_cpu = process_cpu(server) - server_before;
    double cpu = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) + (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6
        + (after.ru_stime.tv_sec - before.ru_stime.tv_sec) + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
    fprintf(stderr, "floor_db %s: %llu requests in %.2f s on %d connections%s\n", mode, done, elapsed, connections,
        strcmp(mode, "sync") == 0 ? (batch > 1 ? ", several users per transaction" : ", one user per transaction") : "");
    printf("%.0f %.0f %.0f\n", done / elapsed, done ? cpu * 1e6 / done : 0, done ? server_cpu * 1e6 / done : 0);
    for (int i = 0; i < connections; i++) {
        mysql_close(workers[i].transactions);
        mysql_close(workers[i].autocommit);
    }
    mysql_library_end();
    return 0;
}
