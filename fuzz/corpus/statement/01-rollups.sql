CREATE MATERIALIZED ROLLUP IF NOT EXISTS iot.readings_1h AS
  SELECT device_id, time_bucket(INTERVAL '1 hour', time) AS bucket,
         avg(temp), min(temp), max(temp), count(*), last_value(temp ORDER BY time), m4(time, temp)
  FROM iot.readings GROUP BY device_id, bucket
  WITH (refresh_interval = '5m', routing = off);
REFRESH MATERIALIZED ROLLUP iot.readings_1h;
DROP MATERIALIZED ROLLUP IF EXISTS iot.readings_1h;