/** One page of a list, as every list operation answers it (openapi.yaml `Pagination`). */
export interface Page<T> {
  data: T[];
  pagination: { total: number; limit: number; offset: number; has_more: boolean };
}

export function pageOf<T>(data: T[], total: number, limit: number, offset: number): Page<T> {
  return { data, pagination: { total, limit, offset, has_more: offset + data.length < total } };
}
