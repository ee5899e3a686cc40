//! tracejit's single-pass trace optimizer: abstract integer domains, peephole rules, CSE,
//! guard and overflow elimination, allocation removal and a heap cache.

pub mod domain;
