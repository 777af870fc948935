-- wrk script: POST /auth/apple with a fresh pre-minted identity token per request.
-- wrk ... -s bench/sign_in.lua URL -- TOKENS_FILE THREADS   (TOKENS_FILE: "<token> <raw nonce>" lines)
-- Each wrk thread takes every THREADS-th line; when its share runs out, requests get 400 (counted as non-2xx).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

function init(args)
    tokens, position = thread_lines(args[1], tonumber(args[2])), 1
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

function response(status, headers, body)
    if status ~= 200 then failed(status, body) end
end
