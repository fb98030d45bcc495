/**
 * Status conditions (`metav1.Condition` lists), as apimachinery's `k8s.io/apimachinery/pkg/api/meta` handles them
 * (`SetStatusCondition`, `FindStatusCondition`, `IsStatusConditionTrue`), in pure functions that return a new list
 * instead of changing one in place.
 */
import type {Condition} from '../crds/schema.js'

/** What a condition of any object carries that these functions read (a Node's or a Pod's conditions too). */
export interface ConditionLike {
  type: string
  status?: string
}

/** The condition of `type`, or undefined (`meta.FindStatusCondition`). */
export function findStatusCondition<C extends ConditionLike>(conditions: readonly C[] | undefined, type: string): C | undefined {
  return conditions?.find((condition) => condition.type === type)
}

/** Whether the condition of `type` is there with status True (`meta.IsStatusConditionTrue`). */
export function isStatusConditionTrue(conditions: readonly ConditionLike[] | undefined, type: string): boolean {
  return findStatusCondition(conditions, type)?.status === 'True'
}

/**
 * The list with `next` set (`meta.SetStatusCondition`), as a new list:
 * - a type not in the list is appended, with `lastTransitionTime` = next's when it has one, else `now`;
 * - a type in the list keeps its place; `status`, `reason`, `message` and `observedGeneration` become next's
 *   (one that next leaves out is dropped: the condition says what this write observed);
 * - `lastTransitionTime` moves only when the status changes (to next's, else `now`); while the status stays it is
 *   kept, and set to `now` only where the old condition had none (the field is required).
 */
export function setStatusCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'> & {lastTransitionTime?: string},
  now: string,
): Condition[] {
  const list = [...(conditions ?? [])]
  const index = list.findIndex((condition) => condition.type === next.type)
  const previous = index >= 0 ? list[index] : undefined
  const transitioned = !previous || previous.status !== next.status || !previous.lastTransitionTime
  const lastTransitionTime = transitioned ? next.lastTransitionTime ?? now : previous.lastTransitionTime!
  const condition: Condition = {...next, lastTransitionTime}
  if (index >= 0) list[index] = condition
  else list.push(condition)
  return list
}
