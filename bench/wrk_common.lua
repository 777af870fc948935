-- Shared by the wrk scripts of bench/: each wrk thread learns its index (`thread_index`), the lines
-- of a file are split between threads (`thread_lines`), and non-200 answers are collected per
-- thread (`failed`) and printed to standard error at the end.
local next_thread = 0
local threads = {}

function setup(thread)
    thread:set("thread_index", next_thread)
    next_thread = next_thread + 1
    threads[#threads + 1] = thread
end

-- The lines of `path` that belong to this thread: every `count`-th one.
function thread_lines(path, count)
    local lines, line_number = {}, 0
    for line in io.lines(path) do
        if line_number % count == thread_index then lines[#lines + 1] = line end
        line_number = line_number + 1
    end
    return lines
end

function failed(status, body)
    failures = (failures or "") .. status .. " " .. body:sub(1, 60) .. "\n"
end

function done(summary, latency, requests)
    for _, thread in ipairs(threads) do
        local failures = thread:get("failures")
        if failures then io.stderr:write(failures) end
    end
end
