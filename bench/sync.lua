-- wrk script: POST /sync for many users, each request with 20 progress and 5 achievement items.
-- wrk ... -s bench/sync.lua URL -- USERS_FILE THREADS MODE
--   USERS_FILE: "<access token> <sync version> <cursor tags>" lines (the version the server has for
--               that user; the tags of that version's cursor and of those after it, of 32
--               characters each, joined by commas: `scale.py sync-users --versions`), so that the
--               server takes each cursor as the user's (a cursor without its tag gets the whole
--               state, as a device whose cursor the server refuses)
--   MODE: mixed      4 lessons and 1 achievement move forward (about 5 real changes), 20 known items
--         unchanged  the 25 items the server already has: nothing to write
--         new        25 items the server has never seen
--         declared   as mixed, in the declared collections of bench/collections.json, which declare
--                    the built-in lessons and achievements with the same rules
--         zipf       as mixed, for a file whose lines may name a user more than once (a Zipf sample,
--                    scripts/bench scale): the cursor is always the file's version, which the
--                    server's only ever passes, so that the answer carries the run's own changes
--         workouts   as zipf, 2 workouts of examples/sync/collections.json moving forward (distance)
-- Users are split between wrk threads; each thread sends its users in turn, with the cursor the
-- device would have (the version after its previous sync).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

function init(args)
    users, turn, mode = {}, 0, args[3]
    for _, line in ipairs(thread_lines(args[1], tonumber(args[2]))) do
        -- The third field: the tags of the cursors (SyncCursorBinding) from the file's version on.
        local token, version, tags = line:match("(%S+) (%S+) ?(%S*)")
        -- The request up to its Content-Length value, made once per user (what wrk.format would
        -- make for every request).
        local head = "POST /sync HTTP/1.1\r\nHost: " .. wrk.headers["Host"] .. "\r\nAuthorization: Bearer " .. token ..
            "\r\nContent-Type: application/json\r\nContent-Length: "
        users[#users + 1] = { head = head, version = tonumber(version), tags = tags, sent = 0 }
    end
end

local function lesson(id, score)
    return '{"beliefSystemId":"bench","lessonId":"' .. id .. '","status":"in_progress","score":' .. score .. ',"earnedXp":5}'
end

local function achievement(id, progress)
    return '{"achievementId":"' .. id .. '","progress":' .. progress .. '}'
end

-- The items that are the same in every request, built once: the client's own work per request is
-- kept small, as it shares the machine's two cores with the server.
local function joined(first, last, item)
    local items = {}
    for i = first, last do items[#items + 1] = item(i) end
    return table.concat(items, ",")
end
local known_lessons = joined(5, 20, function(i) return lesson("l" .. i, 10) end)
local first_known_lessons = joined(1, 4, function(i) return lesson("l" .. i, 10) end)
local known_achievements = joined(2, 5, function(i) return achievement("a" .. i, 1) end)

function request()
    turn = turn % #users + 1
    local user = users[turn]
    user.sent = user.sent + 1
    local n = user.sent
    -- Values that rise with the stored version, so that a repeated run changes the state again.
    local rising = user.version + n
    local progress, achievements
    if mode == "new" then
        local prefix = "new-" .. thread_index .. "-" .. n .. "-"
        progress = joined(1, 20, function(i) return lesson(prefix .. i, 1) end)
        achievements = joined(1, 5, function(i) return achievement(prefix .. i, 1) end)
    elseif mode == "workouts" then
        local distance = 30000 + rising
        progress = '{"workoutId":"w1","distance":' .. distance .. '},{"workoutId":"w2","distance":' .. distance .. '}'
    elseif mode == "mixed" or mode == "declared" or mode == "zipf" then
        local score = 10 + rising
        progress = lesson("l1", score) .. "," .. lesson("l2", score) .. "," .. lesson("l3", score) .. "," .. lesson("l4", score) ..
            "," .. known_lessons
        achievements = achievement("a1", 1 + rising) .. "," .. known_achievements
    else
        progress = first_known_lessons .. "," .. known_lessons
        achievements = achievement("a1", 1) .. "," .. known_achievements
    end
    -- Every changing sync moves the user's version on by one: the device's cursor is the version
    -- after its previous sync, with its tag (none past the file's tags: the server then answers the
    -- whole state, which a run should not reach).
    local behind = (mode == "unchanged" or mode == "zipf" or mode == "workouts") and 0 or n - 1
    local tag = user.tags:sub(behind * 33 + 1, behind * 33 + 32)
    local cursor = (user.version + behind) .. (#tag == 32 and "~" .. tag or "")
    local body
    if mode == "workouts" then
        body = '{"cursor":"' .. cursor .. '","collections":{"workouts":[' .. progress .. ']}}'
    elseif mode == "declared" then
        body = '{"cursor":"' .. cursor .. '","collections":{"lessons":[' .. progress .. '],"badges":[' .. achievements .. ']}}'
    else
        body = '{"cursor":"' .. cursor .. '","progress":[' .. progress .. '],"achievements":[' .. achievements .. ']}'
    end
    return user.head .. #body .. "\r\n\r\n" .. body
end

-- Only when failures are being looked into (SYNC_BENCH_FAILURES set): a response callback makes wrk
-- hand every answer's headers and body to Lua, which costs the client about 8 us per request on
-- the two cores it shares with the server (measured with /usr/bin/time around wrk).
if os.getenv("SYNC_BENCH_FAILURES") then
    function response(status, headers, body)
        if status ~= 200 then failed(status, body) end
    end
end
