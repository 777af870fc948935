-- wrk script: POST /auth/apple with a fresh pre-minted identity token per request.
-- wrk ... -s bench/sign_in.lua URL -- TOKENS_FILE THREADS   (TOKENS_FILE: "<token> <raw nonce>" lines)
-- Each wrk thread takes every THREADS-th line; when its share runs out, requests get 400 (counted as non-2xx).
local next_thread = 0

function setup(thread)
    thread:set("thread_index", next_thread)
    next_thread = next_thread + 1
end

function init(args)
    tokens, position = {}, 1
    local threads, line_number = tonumber(args[2]), 0
    for line in io.lines(args[1]) do
        if line_number % threads == thread_index then tokens[#tokens + 1] = line end
        line_number = line_number + 1
    end
end

local headers = { ["Content-Type"] = "application/json" }

function request()
    local line = tokens[position]
    position = position + 1
    if line == nil then return wrk.format("POST", "/auth/apple", headers, "{}") end
    local token, nonce = line:match("(%S+) (%S+)")
    return wrk.format("POST", "/auth/apple", headers,
        '{"identityToken":"' .. token .. '","nonce":"' .. nonce .. '","device":"bench"}')
end

-- Non-200 answers by status and first bytes of the body, printed at the end (to stderr).
local threads = {}
local setup_thread = setup
function setup(thread)
    setup_thread(thread)
    threads[#threads + 1] = thread
end

function response(status, headers, body)
    if status ~= 200 then
        failures = (failures or "") .. status .. " " .. body:sub(1, 60) .. "\n"
    end
end

function done(summary, latency, requests)
    for _, thread in ipairs(threads) do
        local failures = thread:get("failures")
        if failures then io.stderr:write(failures) end
    end
end
