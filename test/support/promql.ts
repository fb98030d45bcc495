/**
 * The series a PromQL expression selects, read with the Prometheus project's own PromQL grammar (lezer-promql, the
 * parser of Prometheus' web UI): each vector selector's metric name and the label names it matches on. A syntax
 * error throws, so a dashboard query that Prometheus would refuse fails the test that reads it.
 */
import {parser} from '@prometheus-io/lezer-promql'

export interface Selector {
  metric: string
  labels: string[]
}

/** Grafana's interval variables, which are no PromQL: replaced by a duration before parsing. */
const grafanaIntervals = /\$__(rate_interval|interval|range)\b/g

export function selectorsOf(expression: string): Selector[] {
  const text = expression.replace(grafanaIntervals, '5m')
  const tree = parser.parse(text)
  const selectors: Selector[] = []
  const errors: number[] = []
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from)
      if (node.name !== 'VectorSelector') return
      const identifier = node.node.getChild('Identifier')
      if (!identifier) throw new Error(`a selector without a metric name in ${expression}`)
      const labels: string[] = []
      const matchers = node.node.getChild('LabelMatchers')
      for (let child = matchers?.firstChild; child; child = child.nextSibling) {
        const name = child.getChild('LabelName')
        if (name) labels.push(text.slice(name.from, name.to))
      }
      selectors.push({metric: text.slice(identifier.from, identifier.to), labels})
    },
  })
  if (errors.length > 0) throw new Error(`not PromQL (at ${errors.join(', ')}): ${expression}`)
  return selectors
}
