-- a comment; not a statement
SELECT 'a;b' AS "c;d";   /* block ; comment */
SET timelake.read_dedup = 'fal''se';
set datafusion.execution.batch_size TO 1024;
CREATE MATERIALIZED ROLLUP iot.r AS SELECT 1;
;;
SELECT 2