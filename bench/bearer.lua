-- wrk script: GET PATH with the access tokens of a file (one a line) in turn, each thread starting
-- at its own place. wrk ... -s bench/bearer.lua URL -- TOKENS_FILE PATH
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "wrk_common.lua")

function init(args)
    tokens = {}
    for line in io.lines(args[1]) do tokens[#tokens + 1] = "Bearer " .. line end
    path = args[2]
    position = (thread_index * 97) % #tokens
end

function request()
    position = position % #tokens + 1
    return wrk.format("GET", path, { Authorization = tokens[position] })
end

function response(status, headers, body)
    if status ~= 200 then failed(status, body) end
end
