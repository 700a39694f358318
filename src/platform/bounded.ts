/**
 * Sets a key of a bounded map: when a new key would pass `max`, the map is cleared first. For maps
 * whose entries are only an optimisation or a correction (a lost entry costs a list, or a guess),
 * so a clear now and then is cheaper than keeping them in order.
 */
export function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  if (!map.has(key) && map.size >= max) map.clear();
  map.set(key, value);
}
