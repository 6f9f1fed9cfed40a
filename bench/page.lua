-- wrk: the page and its four embedded objects in turn, as v6lab's page
-- transaction asks for them (bench/http-vs-wrk, workload page).
local paths = {"/", "/obj/0", "/obj/1", "/obj/2", "/obj/3"}
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
