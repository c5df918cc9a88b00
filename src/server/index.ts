/** `evenlb/server`: the server-side connection recycler and graceful drain. */
export {};
