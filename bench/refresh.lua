-- wrk script: POST /auth/refresh, each answer's new refresh token queued for a later request, as
-- devices do. wrk ... -s bench/refresh.lua URL -- REFRESH_TOKENS_FILE THREADS
-- Each wrk thread starts with every THREADS-th token; it needs at least as many as its connections.
local next_thread = 0

function setup(thread)
    thread:set("thread_index", next_thread)
    next_thread = next_thread + 1
end

function init(args)
    queue, first, last = {}, 1, 0
    local threads, line_number = tonumber(args[2]), 0
    for line in io.lines(args[1]) do
        if line_number % threads == thread_index then
            last = last + 1
            queue[last] = line
        end
        line_number = line_number + 1
    end
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
        failures = (failures or "") .. status .. " " .. body:sub(1, 60) .. "\n"
    end
end

-- Non-200 answers by status and first bytes of the body, printed at the end (to stderr).
local threads = {}
local setup_thread = setup
function setup(thread)
    setup_thread(thread)
    threads[#threads + 1] = thread
end

function done(summary, latency, requests)
    for _, thread in ipairs(threads) do
        local failures = thread:get("failures")
        if failures then io.stderr:write(failures) end
    end
end
