-- wrk script: POST /auth/guest, a new guest account per request.
-- wrk ... -s bench/guest.lua URL
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

local headers = { ["Content-Type"] = "application/json" }

function request()
    return wrk.format("POST", "/auth/guest", headers, '{"device":"bench"}')
end

function response(status, headers, body)
    if status ~= 200 then failed(status, body) end
end
