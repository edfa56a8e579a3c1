"""Built-in losses (plugin kind ``loss``)."""
