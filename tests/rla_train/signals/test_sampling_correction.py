"""The importance ratios between the trainer's and the sampler's log-probabilities, worked by hand."""

from __future__ import annotations

import math

import pytest

from rla_train.signals.sampling_correction import sampling_ratios

LN2, LN3 = math.log(2), math.log(3)


def ratios(trainer, sampler, mode, clip_min=None, clip_max=3.0):
    return sampling_ratios(trainer, sampler, mode=mode, clip_min=clip_min, clip_max=clip_max)


def test_token_truncate_caps_each_token():
    # differences old - sampled: ln2, 2·ln2, -ln2 -> ratios 2, 4, 0.5; 4 is cut to the cap 3
    assert ratios([-1.0, -1.0, -2.0], [-1 - LN2, -1 - 2 * LN2, -2 + LN2], "token_truncate") == pytest.approx([2, 3, 0.5])
    # a lower bound lifts 0.5 to 0.6
    assert ratios([-2.0], [-2 + LN2], "token_truncate", clip_min=0.6) == pytest.approx([0.6])


def test_token_mask_zeroes_the_tokens_outside_the_bounds():
    # ratios 2, 4, 0.5 in [0.6, 3]: only 2 survives
    assert ratios([-1.0, -1.0, -2.0], [-1 - LN2, -1 - 2 * LN2, -2 + LN2], "token_mask",
                  clip_min=0.6) == pytest.approx([2, 0, 0])


def test_sequence_modes_take_one_ratio_from_the_summed_differences():
    # ln2 + ln3 - ln2 = ln3 -> 3 (under the cap 4, kept); ln2 + ln3 -> 6 (truncated to 3, or masked to 0)
    assert ratios([0.0, 0.0, 0.0], [-LN2, -LN3, LN2], "sequence_mask", clip_max=4.0) == pytest.approx([3])
    assert ratios([0.0, 0.0], [-LN2, -LN3], "sequence_truncate") == pytest.approx([3])
    assert ratios([0.0, 0.0], [-LN2, -LN3], "sequence_mask") == [0.0]
    assert ratios([0.0, 0.0], [-LN2, -LN3], "sequence_mask", clip_max=None) == pytest.approx([6])


def test_an_unknown_sampler_logprob_counts_as_agreeing():
    # the NaN token contributes 0: the sequence ratio is exp(ln2) = 2, the token ratios 2 and 1
    assert ratios([-1.0, -5.0], [-1 - LN2, math.nan], "sequence_truncate") == pytest.approx([2])
    assert ratios([-1.0, -5.0], [-1 - LN2, math.nan], "token_truncate") == pytest.approx([2, 1])


def test_a_huge_difference_stays_a_number():
    assert ratios([0.0], [-1000.0], "token_mask", clip_max=None) == [math.exp(700.0)]


def test_bad_arguments_say_what_is_expected():
    with pytest.raises(ValueError, match="one sampler log-probability per completion token"):
        ratios([0.0, 0.0], [0.0], "token_mask")
    with pytest.raises(ValueError, match="mode must be one of"):
        ratios([0.0], [0.0], "token")
