-- wrk script: POST /auth/refresh, each answer's new refresh token queued for a later request, as
-- devices do. wrk ... -s bench/refresh.lua URL -- REFRESH_TOKENS_FILE THREADS
-- Each wrk thread starts with every THREADS-th token; it needs at least as many as its connections.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

function init(args)
    queue = thread_lines(args[1], tonumber(args[2]))
    first, last = 1, #queue
end

local headers = { ["Content-Type"] = "application/json" }

function request()
    local token = "exhausted"
    if first <= last then
        token = queue[first]
        queue[first] = nil
        first = first + 1
    end
    return wrk.format("POST", "/auth/refresh", headers, '{"refreshToken":"' .. token .. '"}')
end

function response(status, headers, body)
    local token = status == 200 and body:match('"refreshToken":"([^"]+)"')
    if token then
        last = last + 1
        queue[last] = token
    else
        failed(status, body)
    end
end
