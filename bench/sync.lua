-- wrk script: POST /sync for many users, each request with 20 progress and 5 achievement items.
-- wrk ... -s bench/sync.lua URL -- USERS_FILE THREADS MODE
--   USERS_FILE: "<access token> <sync version>" lines (the version the server has for that user)
--   MODE: mixed      4 lessons and 1 achievement move forward (about 5 real changes), 20 known items
--         unchanged  the 25 items the server already has: nothing to write
--         new        25 items the server has never seen
-- Users are split between wrk threads; each thread sends its users in turn, with the cursor the
-- device would have (the version after its previous sync).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

function init(args)
    users, turn, mode = {}, 0, args[3]
    for _, line in ipairs(thread_lines(args[1], tonumber(args[2]))) do
        local token, version = line:match("(%S+) (%S+)")
        users[#users + 1] = { header = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" },
                              version = tonumber(version), sent = 0 }
    end
end

local function lesson(id, score)
    return '{"beliefSystemId":"bench","lessonId":"' .. id .. '","status":"in_progress","score":' .. score .. ',"earnedXp":5}'
end

local function achievement(id, progress)
    return '{"achievementId":"' .. id .. '","progress":' .. progress .. '}'
end

function request()
    turn = turn % #users + 1
    local user = users[turn]
    user.sent = user.sent + 1
    local n = user.sent
    -- Values that rise with the stored version, so that a repeated run changes the state again.
    local rising = user.version + n
    local progress, achievements = {}, {}
    for i = 1, 20 do
        if mode == "new" then
            progress[i] = lesson("new-" .. thread_index .. "-" .. n .. "-" .. i, 1)
        elseif mode == "mixed" and i <= 4 then
            progress[i] = lesson("l" .. i, 10 + rising)
        else
            progress[i] = lesson("l" .. i, 10)
        end
    end
    for i = 1, 5 do
        if mode == "new" then
            achievements[i] = achievement("new-" .. thread_index .. "-" .. n .. "-" .. i, 1)
        elseif mode == "mixed" and i == 1 then
            achievements[i] = achievement("a1", 1 + rising)
        else
            achievements[i] = achievement("a" .. i, 1)
        end
    end
    -- Every changing sync moves the user's version on by one.
    local cursor = mode == "unchanged" and user.version or user.version + n - 1
    local body = '{"cursor":"' .. cursor .. '","progress":[' .. table.concat(progress, ",") ..
        '],"achievements":[' .. table.concat(achievements, ",") .. ']}'
    return wrk.format("POST", "/sync", user.header, body)
end

function response(status, headers, body)
    if status ~= 200 then failed(status, body) end
end
