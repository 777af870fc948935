-- wrk script: POST /auth/refresh, each answer's new refresh token queued for a later request, as
-- devices do. wrk ... -s bench/refresh.lua URL -- REFRESH_TOKENS_FILE THREADS [CONNECTIONS]
-- Each wrk thread starts with every THREADS-th token; it needs at least as many as its connections.
--
-- A token whose request did not reach siwa stays the device's token, as it would on a device: a
-- request refused by nginx (429 from a request limit, 502, 503 or 504 when siwa did not answer) or
-- by siwa's 503 (nothing committed) puts its token back in the queue. Each request names its token
-- in X-Bench-Token, which the benchmark stack's nginx (scripts/bench) sends back with whatever
-- answers it, so that an answer is matched to its token. A request that got no answer at all (a
-- connection error) is noticed with CONNECTIONS: a thread has at most one request in flight per
-- connection, so when a thread about to send has as many in flight as it has connections, one of
-- them was lost; the oldest goes back in the queue (sent again within SIWA_REFRESH_REUSE_INTERVAL,
-- a token rotated by a request whose answer was lost still gets a pair, docs/API.md).
-- Every other failure (401 and the like: siwa refused the token) spends the token, and is
-- reported. When a thread has no token left it sends "exhausted", which siwa answers 401.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

function init(args)
    queue = thread_lines(args[1], tonumber(args[2]))
    first, last = 1, #queue
    -- The connections of this thread (wrk gives each of its threads CONNECTIONS / THREADS).
    connections = args[3] and math.floor(tonumber(args[3]) / tonumber(args[2])) or nil
    -- Tokens in flight: token -> the order in which it was sent.
    in_flight, in_flight_count, sent = {}, 0, 0
end

local function push(token)
    last = last + 1
    queue[last] = token
end

local function settle(token)
    if token and in_flight[token] then
        in_flight[token] = nil
        in_flight_count = in_flight_count - 1
        return true
    end
    return false
end

function request()
    if connections and in_flight_count >= connections then
        -- One request of this thread got no answer: its token goes back (the oldest in flight).
        local oldest, order
        for token, sent_as in pairs(in_flight) do
            if not order or sent_as < order then oldest, order = token, sent_as end
        end
        settle(oldest)
        push(oldest)
    end
    local token = "exhausted"
    if first <= last then
        token = queue[first]
        queue[first] = nil
        first = first + 1
        sent = sent + 1
        in_flight[token] = sent
        in_flight_count = in_flight_count + 1
    end
    return wrk.format("POST", "/auth/refresh", { ["Content-Type"] = "application/json", ["X-Bench-Token"] = token },
        '{"refreshToken":"' .. token .. '"}')
end

-- Answers that mean the request changed nothing at siwa: nginx's own refusals, siwa unreachable.
local not_reached = { [429] = true, [502] = true, [503] = true, [504] = true }

function response(status, headers, body)
    local sent_token = headers["X-Bench-Token"]
    local known = settle(sent_token)
    local token = status == 200 and body:match('"refreshToken":"([^"]+)"')
    if token then
        push(token)
    else
        if known and not_reached[status] then
            push(sent_token)
        end
        failed(status, body)
    end
end
