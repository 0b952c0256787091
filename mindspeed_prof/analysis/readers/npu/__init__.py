"""torch_npu captures: ``*_ascend_pt`` folders and the files of their text and db exports."""
