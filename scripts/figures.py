#!/usr/bin/env python3
# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Render result tables from docs/bench JSON into the Markdown pages.

A generated block sits between ``<!-- figures:NAME -->`` and ``<!-- /figures -->``;
``python3 scripts/figures.py`` rewrites every block of README.md and docs/*.md from
the JSON, ``--check`` only reports blocks that differ (exit 1). NAME is a key of
FIGURES. ``src/unilab_bench/test/test_docs_figures.py`` runs the same check.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCK = re.compile(r'(<!-- figures:([a-z0-9_]+) -->\n)(.*?)(<!-- /figures -->)', re.S)


def load(name: str) -> dict:
    """Return docs/bench/NAME as a dict."""
    return json.loads((ROOT / 'docs' / 'bench' / name).read_text())


def _pct(x: float) -> str:
    return f'{100 * x:.0f} %'


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
    return '\n'.join(lines) + '\n'


def learn_arm6() -> str:
    """Return the default arm run's table: one row per seed and the IK expert."""
    d = load('learn_arm6.json')
    seeds = sorted(d['per_seed'].items(), key=lambda kv: int(kv[0]))
    # return_first appears only where the bench recorded it.
    first = all('train_return_first' in r for _, r in seeds)
    rows = []
    for seed, r in seeds:
        rows.append([seed] + ([f'{r["train_return_first"]:.1f}'] if first else [])
                    + [f'{r["train_return_last"]:.2f}', f'{r["eval_return"]:.2f}',
                       _pct(r['eval_success']), f'{r["wall_s"]:,.0f}'])
    e = d['expert']
    rows.append(['IK expert (same episodes, same gate)'] + ([''] if first else [])
                + ['', f'{e["return"]:.2f}', _pct(e['success']), ''])
    header = (['seed'] + (['return_first'] if first else [])
              + ['return_last (training)', 'deterministic eval return', 'reach success',
                 'wall_s'])
    return (_table(header, rows)
            + f'\nSource: `docs/bench/learn_arm6.json` (commit `{str(d.get("commit"))[:10]}`).\n')


def learn_rsl_rl_arm6() -> str:
    """Return rsl_rl's PPO (published defaults) beside ours on arm6_reach, per seed."""
    return _rsl_rl_table('learn_rsl_rl_arm6.json')


def learn_rsl_rl_quad() -> str:
    """Return rsl_rl's PPO (published defaults) beside ours on quad_walk: tracking per command."""
    d = load('learn_rsl_rl_quad.json')
    rows = []
    for seed, r in sorted(d['per_seed'].items(), key=lambda kv: int(kv[0])):
        commands = [k[len('eval_'):] for k in r['unilab'] if k.startswith('eval_')]
        for c in commands:
            row = [seed, f'`{c}`']
            for who in ('unilab', 'rsl_rl'):
                e = r[who][f'eval_{c}']
                row += [f'{e["vx_error"]:.3f}', f'{e["yaw_error"]:.3f}', _pct(e['survival'])]
            rows.append(row)
    header = ['seed', 'command', 'UniLab vx error [m/s]', 'UniLab yaw error [rad/s]',
              'UniLab survival', 'rsl_rl vx error [m/s]', 'rsl_rl yaw error [rad/s]',
              'rsl_rl survival']
    walls = ', '.join(f'seed {k}: UniLab {v["unilab"]["wall_s"]:,.0f} s, rsl_rl '
                      f'{v["rsl_rl"]["wall_s"]:,.0f} s' for k, v in sorted(d['per_seed'].items()))
    return (_table(header, rows)
            + f'\n{d["task"]}, {d["steps"]:,} env steps per run ({walls}); source: '
            f'`docs/bench/learn_rsl_rl_quad.json` (commit `{str(d.get("commit"))[:10]}`).\n')


def _fmt(x, digits=3) -> str:
    return '-' if x is None else f'{x:.{digits}f}'


def learn_go2() -> str:
    """Return go2_walk per seed and command: ours (learn_go2) and rsl_rl's (learn_rsl_rl_go2)."""
    ours = load('learn_go2.json')
    peer = load('learn_rsl_rl_go2.json')
    rows = []
    for seed, r in sorted(ours['per_seed'].items(), key=lambda kv: int(kv[0])):
        theirs = peer['per_seed'].get(seed, {}).get('rsl_rl')
        for c in (k for k in r if isinstance(r[k], dict) and 'survival' in r[k]):
            e = r[c]
            row = [seed, f'`{c}`', _fmt(e['vx_error']), _fmt(e['vy_error']),
                   _fmt(e['yaw_error']), _fmt(e['drift']), _pct(e['survival'])]
            if theirs is not None:
                t = theirs[f'eval_{c}']
                row += [_fmt(t['vx_error']), _fmt(t['vy_error']), _fmt(t['yaw_error']),
                        _pct(t['survival'])]
            else:
                row += ['-'] * 4
            rows.append(row)
    header = ['seed', 'command', 'vx error', 'vy error', 'yaw error', 'drift', 'survival',
              'rsl_rl vx error', 'rsl_rl vy error', 'rsl_rl yaw error', 'rsl_rl survival']
    met = ', '.join(f'seed {k}: ' + (', '.join(t for t, ok in v.items() if ok) or 'none')
                    for k, v in sorted(ours['targets_met'].items()))
    walls = ', '.join(f'seed {k}: ours {v["unilab"]["wall_s"]:,.0f} s, rsl_rl '
                      f'{v["rsl_rl"]["wall_s"]:,.0f} s' for k, v in sorted(peer['per_seed'].items()))
    return (_table(header, rows)
            + f'\nErrors in m/s and rad/s, drift (trunk speed at a zero command) in m/s. '
            f'{ours["task"]}, {ours["steps"]:,} env steps per run ({walls} of training on '
            f'the 2-core VM). Targets met: {met}. Sources: '
            f'`docs/bench/learn_go2.json` (commit `{str(ours.get("commit"))[:10]}`), '
            f'`docs/bench/learn_rsl_rl_go2.json` (commit `{str(peer.get("commit"))[:10]}`).\n')


#: go2_walk seed 0 at growing budgets: the preset's run, then the same run resumed further.
GO2_BUDGETS = ('learn_go2.json', 'learn_go2_10m.json', 'learn_go2_15m.json')


#: rsl_rl's PPO (published defaults) on go2_walk seed 0 at those budgets, where it ran.
GO2_PEER_BUDGETS = ('learn_rsl_rl_go2.json', 'learn_rsl_rl_go2_15m.json')


def learn_go2_budget() -> str:
    """Return go2_walk seed 0 per command at each budget scored, ours then rsl_rl's."""
    names = [n for n in GO2_BUDGETS if (ROOT / 'docs' / 'bench' / n).is_file()]
    runs = [load(n) for n in names]
    peer_names = [n for n in GO2_PEER_BUDGETS if (ROOT / 'docs' / 'bench' / n).is_file()]
    peers = [load(n) for n in peer_names]
    head = (['command'] + [f'{d["steps"] / 1e6:g} M: vx / vy / yaw error, survival'
                           for d in runs]
            + [f'rsl_rl {d["steps"] / 1e6:g} M' for d in peers])
    first = runs[0]['per_seed']['0']
    rows = []
    for c in (k for k in first if isinstance(first[k], dict) and 'survival' in first[k]):
        cells = [d['per_seed']['0'][c] for d in runs]
        cells += [d['per_seed']['0']['rsl_rl'][f'eval_{c}'] for d in peers]
        rows.append([f'`{c}`'] + [f'{_fmt(e["vx_error"])} / {_fmt(e["vy_error"])} / '
                                  f'{_fmt(e["yaw_error"])}, {_pct(e["survival"])}'
                                  for e in cells])
    walls = ', '.join(f'{d["steps"] / 1e6:g} M: {d["per_seed"]["0"]["wall_s"]:,.0f} s'
                      for d in runs)
    peer_walls = ', '.join(f'{d["steps"] / 1e6:g} M: '
                           f'{d["per_seed"]["0"]["rsl_rl"]["wall_s"]:,.0f} s' for d in peers)
    met = ', '.join(f'{d["steps"] / 1e6:g} M: ' + (', '.join(
        t for t, ok in d['targets_met']['0'].items() if ok) or 'none') for d in runs)
    sources = ', '.join(f'`docs/bench/{n}` (commit `{str(d.get("commit"))[:10]}`)'
                        for n, d in zip(names + peer_names, runs + peers))
    return (_table(head, rows)
            + f'\nSeed 0, errors in m/s and rad/s. Training wall time on the 2-core VM: '
            f'{walls}' + (f'; rsl_rl (published defaults, trained from scratch) {peer_walls}'
                          if peers else '')
            + f'. Targets met (ours): {met}. Sources: {sources}.\n')


def learn_go2_seeds() -> str:
    """Return go2_walk per seed at the 15 M budget: every command's errors and survival."""
    d = load('learn_go2_15m.json')
    seeds = sorted(d['per_seed'], key=int)
    runs = [d['per_seed'][s] for s in seeds]
    head = ['command'] + [f'seed {s}: vx / vy / yaw error, survival' for s in seeds]
    rows = [[f'`{c}`'] + [f'{_fmt(r[c]["vx_error"])} / {_fmt(r[c]["vy_error"])} / '
                          f'{_fmt(r[c]["yaw_error"])}, {_pct(r[c]["survival"])}' for r in runs]
            for c in (k for k in runs[0] if isinstance(runs[0][k], dict)
                      and 'survival' in runs[0][k])]
    walls = ', '.join(f'seed {s}: {r["wall_s"]:,.0f} s ({r["run_dir"]})'
                      for s, r in zip(seeds, runs))
    met = '; '.join(f'seed {s}: ' + (', '.join(t for t, ok in d['targets_met'][s].items()
                                               if ok) or 'none') for s in seeds)
    return (_table(head, rows)
            + f'\n{d["steps"]:,} env steps per seed; errors in m/s and rad/s. Training wall '
            f'time on the 2-core VM: {walls}. Targets met: {met}. Source: '
            f'`docs/bench/learn_go2_15m.json` (commit `{str(d.get("commit"))[:10]}`).\n')


def learn_rsl_rl_our_settings_arm6() -> str:
    """Return rsl_rl's PPO with our PPO's settings beside ours on arm6_reach, per seed."""
    return _rsl_rl_table('learn_rsl_rl_our_settings_arm6.json')


def _rsl_rl_table(name: str) -> str:
    d = load(name)
    seeds = sorted(d['per_seed'].items(), key=lambda kv: int(kv[0]))
    rows = []
    for seed, r in seeds:
        for who, label in (('unilab', 'UniLab PPO'), ('rsl_rl', 'rsl_rl PPO')):
            x = r[who]
            rows.append([seed, label, f'{x["train_return_last"]:.2f}'
                         if x.get('train_return_last') is not None else '',
                         f'{x["eval_return"]:.2f}', _pct(x['eval_success']),
                         f'{x["wall_s"]:,.0f}', f'{x["fps"]:,.0f}'])
    for who, label in (('unilab', 'UniLab PPO'), ('rsl_rl', 'rsl_rl PPO')):
        m = d[who]
        rows.append(['mean ± std', label, '',
                     f'{m["eval_return"]["mean"]:.2f} ± {m["eval_return"]["std"]:.2f}',
                     _pct(m['eval_success']['mean']), f'{m["wall_s"]["mean"]:,.0f}',
                     f'{m["fps"]["mean"]:,.0f}'])
    header = ['seed', 'learner', 'return (last training episodes)',
              'deterministic eval return', 'reach success', 'wall_s', 'env steps/s']
    return (_table(header, rows)
            + f'\n{d["steps"]:,} env steps per run; source: `docs/bench/{name}` '
            f'(commit `{str(d.get("commit"))[:10]}`).\n')


def robot_ur5e() -> str:
    """Return ``bench robot``'s figures on the UR5e double against the issue's targets."""
    d = load('robot_ur5e.json')
    met = d.get('target_met', {})

    def row(name, value, target):
        return [f'`{name}`', value, target, 'met' if met.get(name) else '**missed**']
    rows = [
        row('success', f'{d["success"]:.2f} ({d["goals"]} goals, within '
            f'{100 * d["success_radius_m"]:.0f} cm before {d["goal_timeout_s"]:.0f} s)',
            '>= 0.95'),
        row('below_mount_s', f'{d["below_mount_s"]:.2f} s', '0'),
        row('tool_speed_p99_mps', f'{d["tool_speed_p99_mps"]:.2f} m/s', '<= 1.0'),
        row('clamp_share', f'{d["clamp_share"]:.3f} ({d["gate"]["clamped"]} of '
            f'{d["gate"]["commands"]} commands; tool-speed rule '
            f'{d["gate"].get("tool_speed_clamps", 0)}, tracking '
            f'{d["gate"].get("tracking_clamps", 0)}, envelope '
            f'{d["gate"].get("envelope_clamps", 0)})', '<= 0.10'),
        row('tracking_error_p99_rad', f'{d["tracking_error_p99_rad"]:.3f} rad', '<= 0.1'),
        row('goals_refused', f'{d["goals_refused"]} of {d["goals_outside"]} sent outside',
            f'{d["goals_outside"]}'),
        row('commands_out_of_trained_range', f'{d["commands_out_of_trained_range"]}', '0'),
    ]
    return (_table(['figure', 'measured', 'target', ''], rows)
            + f'\nSource: `docs/bench/robot_ur5e.json` (commit `{str(d.get("commit"))[:10]}`'
            f'; policy: {d["model"]}).\n')


def _go2_row(d: dict) -> list[str]:
    """Return one interface's column of the Go2-on-its-double table."""
    seg, walk = d['segments'], d['time_to_walk']
    knock, tilt = d['knock_over'], d['tilted_start']

    def ms(v):
        return 'none' if v is None else f'{v:.1f} ms'
    return [
        f'{seg["forward"]["vx_mean_mps"]:.2f} m/s (error {d["vx_error_mps"]:.2f})',
        f'{seg["sideways"]["vy_mean_mps"]:.2f} m/s (error {d["vy_error_mps"]:.2f})',
        f'{seg["turn"]["yaw_mean_radps"]:.2f} rad/s (error {d["yaw_error_radps"]:.2f})',
        f'{d["falls"]}',
        'none' if d['torque_clamp_share'] is None else f'{d["torque_clamp_share"]:.3f}',
        f'{d["joints_outside_trained_range"]}',
        f'{d["stand_up_peak_torque_ratio"]:.2f}',
        (f'latched, damping after {ms(knock["damping_after_bound_ms"])}'
         if knock['fall_stop_latched'] else
         f'**stopped before it**: {d["supervisor"].get("legged_fault") or "not latched"}'),
        f'{"latched" if tilt["fall_stop_latched"] else "**not latched**"}, '
        f'{tilt["stand_ups"]} stand-ups',
        f'{walk["total_s"]:.0f} s (export {walk["export_s"]:.1f}, check-robot '
        f'{walk["check_robot_s"]:.1f}, deploy to first command '
        f'{walk["deploy_to_first_command_s"]:.1f}, stand-up {walk["stand_up_s"]:.1f}, first '
        f'step {walk["first_step_s"] if walk["first_step_s"] is not None else "none"} s)',
        f'{d["supervisor"].get("legged_period_error_p99_us", 0) / 1000:.1f} ms, '
        f'{d["supervisor"].get("legged_deadline_misses", 0)} of '
        f'{d["supervisor"].get("legged_loop_cycles", 0)} missed']


def _go2_15m_headline(d: dict) -> str:
    """Return the README's line of the 15 M-step policy on the Go2 double."""
    seg = d['segments']
    met = sum(bool(v) for v in d['target_met'].values())
    return (f'v_x {seg["forward"]["vx_mean_mps"]:.2f} m/s at 0.5 (error '
            f'{d["vx_error_mps"]:.2f}), turn in place {seg["turn"]["yaw_mean_radps"]:.2f} rad/s '
            f'at 0.8 (error {d["yaw_error_radps"]:.2f}), {d["falls"]} falls: {met} of '
            f'{len(d["target_met"])} targets met')


def robot_go2() -> str:
    """Return ``bench robot`` on the Go2 double: position (driver's PD) beside effort."""
    pos, eff = load('robot_go2.json'), load('robot_go2_effort.json')
    names = ['v_x at 0.5 m/s (target error <= 0.15)', 'v_y at 0.3 m/s',
             'yaw at 0.8 rad/s, in place (target error <= 0.15)', 'falls (target 0)',
             'torque clamp share, policy ticks (target <= 0.05)',
             'joint samples outside the trained range (target 0)',
             'stand-up peak torque / limit (target <= 1)',
             'knock-over (3 m/s kick): fall stop (target: damping within 50 ms of the bound)',
             'start on its side (1.4 rad), armed: fall stop (target: no stand-up)',
             'from a trained run to the first step', 'supervisor loop (500 Hz): period error p99']
    runs = [('robot_go2.json', pos, '`go2` (position: the driver\'s PD), 5 M policy'),
            ('robot_go2_effort.json', eff, '`go2_effort` (the gate\'s PD), 5 M policy')]
    # The same benches with the 15 M-step policy of the same seed (go2.md "What the budget
    # buys"), and seed 1's 15 M policy (trained in one run), where they were run.
    for name, label in (('robot_go2_15m.json', '`go2`, 15 M policy'),
                        ('robot_go2_effort_15m.json', '`go2_effort`, 15 M policy'),
                        ('robot_go2_15m_s1.json', '`go2`, 15 M policy, seed 1')):
        if (ROOT / 'docs' / 'bench' / name).is_file():
            runs.append((name, load(name), label))
    rows = [[n, *cells] for n, *cells in zip(names, *(_go2_row(d) for _, d, _ in runs))]
    policies = ', '.join(dict.fromkeys(f'`{pathlib.Path(d["model"]).parent.name}/'
                                       f'{pathlib.Path(d["model"]).name}`' for _, d, _ in runs))
    commits = ', '.join(dict.fromkeys(f'`{str(d.get("commit"))[:10]}`' for _, d, _ in runs))
    return (_table(['', *(label for _, _, label in runs)], rows)
            + '\nSources: ' + ', '.join(f'`docs/bench/{n}`' for n, _, _ in runs)
            + f' (commit {commits}; policies {policies}, variant {pos["variant"]}).\n')


def adapt_go2() -> str:
    """Return ``bench adapt --robot go2``: walking before and after adapting, both floors."""
    d = load('adapt_go2.json')
    floors = [('', f'`{d["variant"]}` (adapted on)'), ('_on_real', '`real` (ordinary floor)')]

    def pair(key, suffix, pct=False):
        a, b = d[f'{key}_before{suffix}'], d[f'{key}_after{suffix}']
        return f'{_pct(a)} -> {_pct(b)}' if pct else f'{_fmt(a)} -> {_fmt(b)}'

    def cmd(suffix, command, key):
        out = []
        for side in ('before', 'after'):
            row = next(c for c in d[f'per_command_{side}{suffix}'] if c['command'] == command)
            out.append(_fmt(row[key]))
        return ' -> '.join(out)

    rows = [[f'walking success, {d["eval_segments"]} segments', *(pair('success', s, True)
                                                                 for s, _ in floors)],
            ['falls', *(f'{d["falls_before" + s]} -> {d["falls_after" + s]}' for s, _ in floors)]]
    for key, name in (('vx_error', 'v_x'), ('vy_error', 'v_y'), ('yaw_error', 'yaw')):
        rows.append([f'{name} error, all segments', *(pair(key, s) for s, _ in floors)])
    for command, key, name in (([0.5, 0.0, 0.0], 'vx_error', 'v_x error at 0.5 m/s'),
                               ([1.0, 0.0, 0.0], 'vx_error', 'v_x error at 1.0 m/s'),
                               ([0.0, 0.3, 0.0], 'vy_error', 'v_y error at 0.3 m/s'),
                               ([0.0, 0.0, 0.8], 'yaw_error', 'yaw error at 0.8 rad/s'),
                               ([0.0, 0.0, -0.8], 'yaw_error', 'yaw error at -0.8 rad/s')):
        rows.append([name, *(cmd(s, command, key) for s, _ in floors)])
    return (_table(['deterministic, before -> after', *(n for _, n in floors)], rows)
            + f'\n{d["rounds"]} rounds of {d["min_episodes"]} segments (the policy sampling: '
            f'{d["robot_segments"]} segments, falls {d["robot_falls"]}): '
            f'{d["versions_deployed"]} versions '
            f'deployed, {d["candidates_rejected"]} rejected by the simulation test, '
            f'{d["rollbacks"]} rollbacks; falls in the first segment after an update: '
            f'{d["falls_after_update"]} of {d["updates_followed"]}; {d["adapt_wall_s"]:.0f} s. '
            + (f'Before adapting, on ice (friction {d["ice_friction"]:g}): walking success '
               f'{_pct(d["success_before_on_ice"])} of {d["segments_before_on_ice"]} segments, '
               f'v_x error {_fmt(d["vx_error_before_on_ice"])}. '
               if 'success_before_on_ice' in d else '')
            + f'Gain {d["success_gain_points"]:+.1f} points (target +20: '
            f'{"met" if d["adaptation_target_met"] else "not met"}). Errors in m/s and rad/s.'
            + _adapt_go2_latency(d)
            + f' Source: `docs/bench/adapt_go2.json` (commit `{str(d.get("commit"))[:10]}`).\n')


def _adapt_go2_latency(d: dict) -> str:
    """Return the latency part's sentence of ``adapt_go2`` ('' when it did not run)."""
    if d.get('control_p99_ms_adapt_increase') is None:
        return ' Control loop beside the learner: not measured.'

    def ms(key):
        return f'{d[key] / 1000:.2f}'
    return (f' Control loop beside the learner ({d["latency_rounds"]} alternated rounds, '
            f'{d["adapt_rounds_during_latency"]} adaptation rounds during them): supervisor '
            f'period error p99 {ms("legged_period_error_p99_us_mean")} ms under `deploy`, '
            f'{ms("legged_period_error_p99_us_mean_during_adapt")} ms under `adapt` '
            f'({d["control_p99_ms_adapt_increase"]:+.2f} ms; target +0.5: '
            f'{"met" if d["latency_target_met"] else "not met"}); gate action latency p99 '
            f'{ms("action_latency_p99_us_mean")} -> '
            f'{ms("action_latency_p99_us_mean_during_adapt")} ms; fall stops latched during '
            f'the runs: {_latched(d["latency_runs"])} `deploy`, '
            f'{_latched(d["latency_runs_during_adapt"])} `adapt`.' + _double_gaps(d))


def _double_gaps(d: dict) -> str:
    """Return the double's longest joint-state silence per side ('' before it was kept)."""
    sides = [(d['latency_runs'], '`deploy`'), (d['latency_runs_during_adapt'], '`adapt`')]
    if any(r.get('double_joint_state_gap_max_ms') is None for rows, _ in sides for r in rows):
        return ''
    parts = [f'{max(r["double_joint_state_gap_max_ms"] for r in rows):g} ms under {name}'
             for rows, name in sides]
    past = sum(r['double_joint_state_gaps_past_timeout'] for rows, _ in sides for r in rows)
    return (f' The double\'s own longest joint-state gap: {", ".join(parts)} ({past} past '
            f'the supervisor\'s bound).')


def _latched(runs: list) -> str:
    """Return 'k of n runs' with the latched faults' texts, of a list of latency runs."""
    faults = [r['legged_fault'] for r in runs if r['legged_faults']]
    text = f'{len(faults)} of {len(runs)}'
    return text + (f' ({"; ".join(faults)})' if faults else '')


def graph_view() -> str:
    """Return ``bench graph --view``'s rounds: training with and without the live view."""
    rows = []
    for name in ('graph_view.json', 'graph_view_256.json'):
        if not (ROOT / 'docs' / 'bench' / name).is_file():
            continue
        d = load(name)
        rates = {case: d[f'{case}_steps_per_s'] for case in ('alone', 'view', 'view_per_step')}
        # The view on the per-step topic against the same view on the screen-rate one, round
        # by round (the same minutes): what the per-step JointState costs the bridge.
        per_step = statistics.median(a / b for a, b in zip(rates['view_per_step'],
                                                            rates['view']))
        for case, what, vs_view in (
                ('alone', 'the graph alone', ''),
                ('view', '`unilab view --training` (screen-rate joint states)', ''),
                ('view_per_step', 'the same view on the per-step joint states',
                 f'{per_step:.3f}')):
            ratio = d.get(f'{case}_vs_alone_round_median')
            rows.append([str(d['num_envs']), what, ' / '.join(f'{v:.0f}' for v in rates[case]),
                         '' if ratio is None else f'{ratio:.3f}', vs_view, f'`{name}`'])
    return _table(['envs', 'case', 'control steps/s per round', 'to alone (median of the '
                   'rounds\' ratios)', 'to the screen-rate view (same)', 'source'], rows)


def _bridge_vs_envpool(d: dict) -> str:
    """Return the bridge's headline result: ours / envpool with 2 threads, thread gain, quad12."""
    rows = [r for r in d['peers']['rows'] if r['threads'] == 2]
    t = d['targets']
    quad12 = f'`quad12_walk` {t["quad12_walk_env_steps_per_s"]:,.0f} env steps/s (target ' \
             f'{t["quad12_walk_target"]:,.0f})'
    gains = [r['ours_thread_gain'] for r in rows]
    gain = f'second thread {min(gains):.2f}-{max(gains):.2f}x (target {t["thread_gain_target"]})'
    if rows[0]['ours_vs_envpool'] is None:
        return f'envpool not installed; {gain}; {quad12}'
    vs = [r['ours_vs_envpool'] for r in rows]
    return (f'ours / envpool {min(vs):.2f}-{max(vs):.2f}x (target {t["ours_vs_envpool_target"]}); '
            f'{gain}; {quad12}; load {d["loadavg_before"][0]:.2f} on '
            f'{d["cpu_count"]} cores')


def bridge_peers() -> str:
    """Return ``bench bridge``'s side-by-side table and our tasks' env steps/s."""
    d = load('bridge.json')
    rows = []
    for r in d['peers']['rows']:
        ep = 'not installed' if r['envpool'] is None else f'{r["envpool"]:,.0f}'
        vs = '' if r['ours_vs_envpool'] is None else f'{r["ours_vs_envpool"]:.2f}'
        gain = f'{r["ours_thread_gain"]:.2f}' if 'ours_thread_gain' in r else ''
        egain = f'{r["envpool_thread_gain"]:.2f}' if 'envpool_thread_gain' in r else ''
        rows.append([r['model'], str(r['num_envs']), str(r['threads']), f'{r["ours"]:,.0f}', ep,
                     f'{r["rollout"]:,.0f}', vs, gain, egain])
    out = _table(['model', 'envs', 'threads', 'ours', f'envpool {d["peers"]["envpool"]}',
                  'mujoco.rollout', 'ours / envpool', 'ours: 2nd thread', 'envpool: 2nd thread'],
                 rows)
    tasks = d['tasks_env_steps_per_s']
    task_rows = [[f'`{k}`', f'{v["1"]:,.0f}', f'{v["2"]:,.0f}'] for k, v in tasks.items()]
    out += '\n' + _table(
        ['task', f'env steps/s, {d["tasks_num_envs"]} envs, 1 thread', '2 threads'], task_rows)
    return (out + f'\nSource: `docs/bench/bridge.json` (commit `{str(d.get("commit"))[:10]}`, '
            f'load average {d["loadavg_before"][0]:.2f} before and {d["loadavg_after"][0]:.2f} '
            f'after the run on {d["cpu_count"]} cores).\n')


def bridge_before_after() -> str:
    """Return our tasks' env steps/s on an earlier commit and on this tree, alternated."""
    d = load('bridge_before_after.json')
    rows = [[f'`{r["task"]}`', str(r['threads']), f'{r["before"]:,.0f}', f'{r["after"]:,.0f}',
             f'{r["after_vs_before"]:.2f}'] for r in d['rows']]
    return (_table(['task', 'threads', f'before (`{d["before_commit"][:7]}`)', 'after',
                    'after / before'], rows)
            + f'\nSource: `docs/bench/bridge_before_after.json` ({d["num_envs"]} envs, best of '
              f'{d["repeats"]} alternated runs of {d["steps"]} steps, commit '
              f'`{str(d.get("commit"))[:10]}`, load average {d["loadavg_before"][0]:.2f} '
              f'before and {d["loadavg_after"][0]:.2f} after on {d["cpu_count"]} cores).\n')


def _go2_headline(pos: dict, eff: dict) -> str:
    """Return the Go2 double's headline: forward speed, falls, time to walking."""
    def one(d):
        return (f'v_x {d["segments"]["forward"]["vx_mean_mps"]:.2f} m/s at 0.5, '
                f'{d["falls"]} falls')
    return (f'{one(pos)} / {one(eff)}; trained run to first step '
            f'{pos["time_to_walk"]["total_s"]:.0f} s; fall stop on a 3 m/s kick: damping '
            f'after {pos["knock_over"]["damping_after_bound_ms"]} ms')


def _mean_std(x: dict) -> str:
    return f'{x["mean"]:.2f} ± {x["std"]:.2f}'


def headline() -> str:
    """Return README's headline table: one line per area, each from its JSON."""
    arm = load('learn_arm6.json')
    safety = load('safety.json')
    deploy = load('deploy_quiet.json')
    peer = load('learn_rsl_rl_arm6.json')
    robot = load('robot_ur5e.json')
    quad_peer = load('learn_rsl_rl_quad.json')['per_seed']['0']
    go2 = load('learn_rsl_rl_go2.json')
    go2_ours, go2_rsl = go2['per_seed']['0']['unilab'], go2['per_seed']['0']['rsl_rl']
    rows = [
        ['`arm6_reach` (default run, 3 seeds)',
         f'eval return {arm["eval_return"]["mean"]:.2f} ± {arm["eval_return"]["std"]:.2f}, '
         f'{arm["expert_share"] * 100:.0f} % of the IK expert, reach success '
         f'{_pct(arm["eval_success"]["mean"])}', '`docs/bench/learn_arm6.json`'],
        ['`quad_walk` at 0.5 m/s (seed 0, 1.5 M steps)',
         f'velocity error {quad_peer["unilab"]["eval_vx0.5"]["vx_error"]:.3f} m/s, survival '
         f'{_pct(quad_peer["unilab"]["eval_vx0.5"]["survival"])}',
         '`docs/bench/learn_rsl_rl_quad.json`'],
        [f'`go2_walk` (Unitree Go2, seed 0, {go2["steps"] / 1e6:.0f} M steps)',
         f'v_x error at 0.5 / -0.5 m/s {go2_ours["eval_vx0.5"]["vx_error"]:.3f} / '
         f'{go2_ours["eval_vx-0.5"]["vx_error"]:.3f} m/s (target 0.10), turn in place (0.8 '
         f'rad/s) error {go2_ours["eval_yaw0.8"]["yaw_error"]:.3f} rad/s, random commands '
         f'survival {_pct(go2_ours["eval_random"]["survival"])}; rsl_rl (published defaults, '
         f'same budget): {go2_rsl["eval_vx0.5"]["vx_error"]:.3f} / '
         f'{go2_rsl["eval_vx-0.5"]["vx_error"]:.3f} m/s, '
         f'{_pct(go2_rsl["eval_random"]["survival"])}', '`docs/bench/learn_rsl_rl_go2.json`'],
        ['deploy path (arm6 double, 50 Hz, quiet machine)',
         f'p50 {deploy["deploy_p50_ms"]:.2f} ms, p99 {deploy["deploy_p99_ms"]:.2f} ms '
         f'(rclpy node: {deploy["rclpy_p50_ms"]:.2f} / {deploy["rclpy_p99_ms"]:.2f} ms)',
         '`docs/bench/deploy_quiet.json`'],
        ['rsl_rl PPO (published defaults) on `arm6_reach`, same budget and gate',
         f'eval return {_mean_std(peer["rsl_rl"]["eval_return"])} (ours '
         f'{_mean_std(peer["unilab"]["eval_return"])}), reach success '
         f'{_pct(peer["rsl_rl"]["eval_success"]["mean"])} (ours '
         f'{_pct(peer["unilab"]["eval_success"]["mean"])})',
         '`docs/bench/learn_rsl_rl_arm6.json`'],
        ['rsl_rl PPO (published defaults) on `quad_walk`, seed 0',
         f'velocity error at 0.5 m/s {quad_peer["rsl_rl"]["eval_vx0.5"]["vx_error"]:.3f} m/s '
         f'(ours {quad_peer["unilab"]["eval_vx0.5"]["vx_error"]:.3f}), yaw error at 0.5 rad/s '
         f'{quad_peer["rsl_rl"]["eval_yaw0.5"]["yaw_error"]:.3f} rad/s (ours '
         f'{quad_peer["unilab"]["eval_yaw0.5"]["yaw_error"]:.3f})',
         '`docs/bench/learn_rsl_rl_quad.json`'],
        ['`ur5e_reach` on the UR5e double (real variant, 100 goals)',
         f'success {robot["success"]:.2f}, below the mount {robot["below_mount_s"]:.1f} s, '
         f'{robot["goals_refused"]} of {robot["goals_outside"]} outside goals refused, tool '
         f'speed p99 {robot["tool_speed_p99_mps"]:.2f} m/s (target 1.0), tracking error p99 '
         f'{robot["tracking_error_p99_rad"]:.3f} rad (target 0.1), clamp share '
         f'{robot["clamp_share"]:.3f} (target 0.10)',
         '`docs/bench/robot_ur5e.json`'],
        ['`go2_walk` on the Go2 double (1 kHz, real variant; driver\'s PD / gate\'s PD)',
         _go2_headline(load('robot_go2.json'), load('robot_go2_effort.json')),
         '`docs/bench/robot_go2.json`'],
        *([['`go2_walk` continued to 15 M steps, on the Go2 double (driver\'s PD)',
            _go2_15m_headline(load('robot_go2_15m.json')),
            '`docs/bench/robot_go2_15m.json`']]
          if (ROOT / 'docs' / 'bench' / 'robot_go2_15m.json').is_file() else []),
        ['batched bridge beside envpool (Hopper / HalfCheetah / Ant-v5, 64 and 256 envs, '
         '2 threads, same run)', _bridge_vs_envpool(load('bridge.json')),
         '`docs/bench/bridge.json`'],
        ['safety loop, 1 kHz under load',
         f'p99 {safety["unilab_p99_us"] / 1000:.2f} ms, max '
         f'{safety["unilab_max_us"] / 1000:.1f} ms (target 0.05 / 0.5 ms: '
         f'{"met" if safety["target_met"] else "not met"})',
         '`docs/bench/safety.json`'],
    ]
    return _table(['what', 'result', 'source'], rows)


#: The code each benchmark measures: a JSON predates its figures when a commit after
#: the JSON's ``commit`` touched one of these paths (old and new package names both).
_LAYERS = ['src/unilab_core', 'src/unilab_bridge', 'src/unilab_perception',
           'src/unilab_policy', 'src/unilab_safety', 'src/unilab_interfaces']
_APP = ['src/unilab/unilab', 'src/unilab_bringup', 'config', 'src/unilab/config']
BENCH_PATHS = {
    'adapt': ['adapt.py', 'adapt_latency.py', 'adapt_legged.py', *_LAYERS, *_APP,
              'src/unilab_adapt', 'src/unilab_bag'],
    'bridge': ['bridge.py', 'src/unilab_core', 'src/unilab_bridge'],
    'deploy': ['deploy.py', 'deploy_baseline.py', 'view_client.py', 'src/unilab_view',
               *_LAYERS, *_APP],
    'factory': ['factory.py', 'datafactory.py', 'camera_driver.py', 'src/unilab_core',
                'src/unilab_bridge',
                'src/unilab_perception', 'src/unilab/unilab/factory',
                'src/unilab_datafactory', 'src/unilab_bag'],
    'gae': ['gae.py', 'src/unilab_policy'],
    'graph': ['graph.py', *_LAYERS, *_APP],
    'graph_view': ['graph.py', 'view_client.py', 'src/unilab_view', *_LAYERS, *_APP],
    'learn': ['learn.py', 'learn_quad.py', 'learn_peer.py', 'src/unilab_interop', *_LAYERS,
              *_APP],
    'perception': ['perception.py', 'src/unilab_core', 'src/unilab_perception'],
    'robot': ['robot.py', 'learn_runs.py', *_LAYERS, *_APP],
    'safety': ['safety.py', 'timing.py', 'c', 'src/unilab_core', 'src/unilab_safety'],
    'scale': ['scale.py', *_LAYERS, *_APP],
    'sim2real': ['sim2real.py', *_LAYERS, *_APP],
    'stress': ['stress.py', 'stress_probe.py', 'stress_report.py', *_LAYERS, *_APP],
    'train': ['train.py', *_LAYERS, *_APP],
    'transfer': ['transfer.py', *_LAYERS, *_APP],
    'transport': ['transport.py', 'c', 'src/unilab_core'],
}
#: JSON -> (benchmark, command) for results written before the runner recorded its
#: command line; a JSON with ``command`` (the runner writes it now) needs no entry.
COMMANDS = {
    'adapt.json': ('adapt', 'bench adapt --model RUN_DIR --json docs/bench/adapt.json'),
    'bridge.json': ('bridge', 'bench bridge --json docs/bench/bridge.json'),
    'deploy_quiet.json': ('deploy', 'bench deploy --json docs/bench/deploy_quiet.json'),
    'factory.json': ('factory', 'bench factory --model MODEL --json docs/bench/factory.json'),
    'gae.json': ('gae', 'bench gae --json docs/bench/gae.json'),
    'graph.json': ('graph', 'bench graph --json docs/bench/graph.json'),
    'graph_256.json': ('graph', 'bench graph --num-envs 256 --json docs/bench/graph_256.json'),
    'graph_quad12.json': ('graph',
                          'bench graph --task quad12_walk --json docs/bench/graph_quad12.json'),
    'learn_ant_eval.json': ('learn', 'bench learn --subset ant --seeds 0,1,2'),
    'learn_arm6.json': ('learn', 'bench learn --subset arm6 --seeds 0,1,2'),
    'learn_halfcheetah_eval.json': ('learn', 'bench learn --subset halfcheetah --seeds 0,1,2'),
    'learn_halfcheetah_zoo_settings.json': ('learn', 'bench learn --subset halfcheetah '
                                            '(zoo settings, docs/learning.md)'),
    'learn_hopper.json': ('learn', 'bench learn --subset hopper'),
    'learn_hopper_eval.json': ('learn', 'bench learn --subset hopper --seeds 0,1,2'),
    'learn_hopper_reward_scaling.json': ('learn', 'bench learn --subset hopper '
                                         '(reward scaling, docs/learning.md)'),
    'learn_hopper_sb3.json': ('learn', 'bench learn --subset hopper (SB3 side)'),
    'learn_quad12.json': ('learn', 'bench learn --subset quad12 --seeds 0,1'),
    'learn_ranks.json': ('learn', 'bench learn --subset ranks --steps 1500000 --seeds 0,1,2'),
    'learn_ranks_600k.json': ('learn', 'bench learn --subset ranks --steps 600000'),
    'learn_walker.json': ('learn', 'bench learn --subset walker'),
    'learn_walker_eval.json': ('learn', 'bench learn --subset walker --seeds 0,1,2'),
    'learn_walker_zoo_settings.json': ('learn', 'bench learn --subset walker '
                                       '(zoo settings, docs/learning.md)'),
    'perception.json': ('perception', 'bench perception --json docs/bench/perception.json'),
    'quad_walk_eval.json': ('learn', 'train --task quad_walk --seed 0, then its evaluation '
                            '(docs/learning.md)'),
    'safety.json': ('safety', 'bench safety --json docs/bench/safety.json'),
    'scale.json': ('scale', 'bench scale --json docs/bench/scale.json '
                   '--png docs/img/scaling.png'),
    'sim2real.json': ('sim2real', 'bench sim2real --json docs/bench/sim2real.json'),
    'sim2real_3m.json': ('sim2real', 'bench sim2real --steps 3000000'),
    'sim2real_seeds.json': ('sim2real', 'bench sim2real --seeds 0,1,2'),
    'stress_16.json': ('stress', 'bench stress --robots 16 --duration 180'),
    'stress_4.json': ('stress', 'bench stress --robots 4 --duration 60'),
    'train_hopper.json': ('train', 'bench train --task hopper'),
    'transfer.json': ('transfer', 'bench transfer --json docs/bench/transfer.json'),
    'transport.json': ('transport', 'bench transport --json docs/bench/transport.json '
                       '--png docs/img/transport_latency_run5.png'),
}


def bench_of(name: str, d: dict) -> tuple[str, str]:
    """Return (benchmark, command) of docs/bench/NAME."""
    if d.get('command_line'):
        return str(d.get('benchmark') or COMMANDS.get(name, ('?',))[0]), d['command_line']
    if name not in COMMANDS:
        raise SystemExit(f'docs/bench/{name}: no `command` and no entry in COMMANDS '
                         '(scripts/figures.py)')
    bench, cmd = COMMANDS[name]
    return bench, f'bin/unilab {cmd}'


def bench_paths(bench: str) -> list[str]:
    """Return the repository paths whose changes can change ``bench``'s figures."""
    return [p if '/' in p or p == 'config' else f'src/unilab_bench/unilab_bench/{p}'
            for p in BENCH_PATHS[bench]]


def bench_index() -> str:
    """Return docs/benchmarks.md's index: every current JSON, its command and commit."""
    rows = []
    for f in sorted((ROOT / 'docs' / 'bench').glob('*.json')):
        d = json.loads(f.read_text())
        bench, cmd = bench_of(f.name, d)
        dirty = ' (dirty tree)' if d.get('dirty') else ''
        rows.append([f'`{f.name}`', bench, f'`{cmd}`', f'`{str(d.get("commit"))[:10]}`{dirty}',
                     str(d.get('measured_at', ''))])
    return _table(['JSON', 'bench', 'command', 'commit', 'measured_at'], rows)


def stale() -> list[tuple[str, str, int]]:
    """Return (JSON, commit, n) for each JSON whose bench's paths changed in n commits since."""
    out = []
    for f in sorted((ROOT / 'docs' / 'bench').glob('*.json')):
        d = json.loads(f.read_text())
        bench, _ = bench_of(f.name, d)
        commit = d.get('commit')
        if not commit or bench not in BENCH_PATHS:
            out.append((f.name, str(commit), -1))
            continue
        # A package's tests are on no bench's path: they measure nothing.
        log = subprocess.run(['git', 'rev-list', '--count', '--no-merges', f'{commit}..HEAD', '--',
                              *bench_paths(bench), ':(exclude,glob)src/*/test/**'], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
        out.append((f.name, commit[:10], int(log)))
    return out


FIGURES = {'learn_arm6': learn_arm6, 'learn_rsl_rl_arm6': learn_rsl_rl_arm6,
           'learn_rsl_rl_our_settings_arm6': learn_rsl_rl_our_settings_arm6,
           'learn_rsl_rl_quad': learn_rsl_rl_quad, 'learn_go2': learn_go2,
           'learn_go2_budget': learn_go2_budget, 'learn_go2_seeds': learn_go2_seeds,
           'headline': headline, 'bench_index': bench_index, 'robot_ur5e': robot_ur5e,
           'robot_go2': robot_go2, 'adapt_go2': adapt_go2,
           'graph_view': graph_view, 'bridge_peers': bridge_peers,
           'bridge_before_after': bridge_before_after}


def pages() -> list[pathlib.Path]:
    """Return the Markdown pages that may hold generated blocks."""
    return [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]


def render_page(text: str, where: str = '') -> tuple[str, list[str]]:
    """Return the page with every block regenerated, and the names of blocks that changed."""
    changed = []

    def rep(m: re.Match) -> str:
        name = m.group(2)
        if name not in FIGURES:
            raise SystemExit(f'{where}: unknown figure `{name}`; known: {", ".join(FIGURES)}')
        new = FIGURES[name]()
        if new != m.group(3):
            changed.append(name)
        return m.group(1) + new + m.group(4)

    return BLOCK.sub(rep, text), changed


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with --check, compare) every generated block."""
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    p.add_argument('--check', action='store_true', help='report stale blocks, exit 1')
    p.add_argument('--stale', action='store_true',
                   help='list each bench JSON with the commits since it that touched '
                        'its bench\'s code (BENCH_PATHS); writes nothing')
    args = p.parse_args(argv)
    if args.stale:
        for name, commit, n in stale():
            print(f'{name:40s} {commit:12s} ' + ('unknown' if n < 0 else f'{n} commits since'))
        return 0
    changed_blocks = []
    for page in pages():
        text = page.read_text()
        new, changed = render_page(text, str(page.relative_to(ROOT)))
        changed_blocks += [f'{page.relative_to(ROOT)}: {name}' for name in changed]
        if changed and not args.check:
            page.write_text(new)
    for s in changed_blocks:
        print(('stale: ' if args.check else 'updated: ') + s)
    return 1 if changed_blocks and args.check else 0


if __name__ == '__main__':
    sys.exit(main())
