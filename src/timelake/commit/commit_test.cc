// Copyright 2026 The Timelake Authors. Apache-2.0.
