SELECT 1;
SET timelake.read_dedup;