delete from IoT."Read.ings" where sensor = 's;1' -- why
;DELETE FROM timelake.iot.r;DELETE FROM r WHERE(v > 1)